"""The one way out of a call, for every binding: a unary call runs the pipeline and its
answer is written by the client's codec; a request refused before it became a call is
answered by the codec its refusal carries. Either way the call is finished (counted,
traced, its access line noted) exactly once, here (streams: gateway/streams/driver.py).
The transports only put the outcome on their wire."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.call import Call, CallContext
from gateway.observability.observe import finish
from gateway.pipeline.core import Gateway
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.dialects.contract import ClientCodec, ErrorAnswer, Refusal
from translators.errors import A2AError, a2a_error


@dataclass(slots=True)  # not frozen: one per call (see WireRequest, dialects/contract.py)
class Answered:
    """A unary call's answer, as the client's codec wrote it (or the backend's, passed
    through): the body and, on HTTP+JSON, the status."""

    body: bytes
    status: int = 200


async def run_unary(gateway: Gateway, call: Call, codec: ClientCodec[object],
                    ) -> Answered | A2AError:
    """The call's answer, or the error to answer it with (a bug of ours is an
    InternalError: the client gets an answer in its dialect and the server keeps serving).
    A cancel (the client left, the server stops) finishes the call and goes on."""
    ctx = call.ctx
    try:
        result = await gateway.unary(call)
        if isinstance(result, WireAnswer):
            answered = Answered(result.body, result.status)
        else:
            answered = Answered(codec.answer(result, ctx.loss))
    except A2AError as err:
        finish(ctx, call.op.name, err)
        return err
    except Exception as exc:
        finish(ctx, call.op.name, exc)
        return a2a_error("InternalError")
    except BaseException as exc:
        finish(ctx, call.op.name, exc)
        raise
    finish(ctx, call.op.name, None)
    return answered


def refused(ctx: CallContext, no: Refusal[ErrorAnswer]) -> ErrorAnswer:
    """A request refused before it became a call (a bad body, no such method or route):
    finished as a call is (the same access line and counters), answered in the dialect
    it was refused in."""
    ctx.client_version = no.codec.dialect.version
    finish(ctx, no.op.name if no.op is not None else ops.UNKNOWN, no.error)
    return no.answer()


def unreadable(ctx: CallContext, version: str, err: A2AError) -> None:
    """A request whose body could not be read, in the version it declared."""
    ctx.client_version = version
    finish(ctx, ops.UNKNOWN, err)
