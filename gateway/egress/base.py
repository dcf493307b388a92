"""What every backend client offers the pipeline, the headers all of them send, and the
gateway's own errors about a backend.

A backend's address never reaches a caller: an error about the backend names the tenant
and the request id, and the address and the transport's detail go to the log, where the
request id finds them (non-negotiable "nothing secret reaches a caller").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Protocol

import structlog
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.observability import tracing
from translators.dialects.base import BACKEND_HEADERS, EXTENSION_HEADERS, WireAnswer
from translators.dialects.contract import BackendCodec, Dialect
from translators.errors import BY_NAME, A2AError, a2a_error
from translators.loss import LossReport
from translators.versions import V10

log = structlog.get_logger("a2a_gateway.egress")

# Headers (gRPC: metadata) a backend may answer with that mean something to the client.
ECHOED_HEADERS = ("a2a-extensions", "x-a2a-extensions")

# A stream as it arrives: the events of each read of the backend, decoded as they are
# taken (a read may hold hundreds; whoever serves them takes turns between them,
# gateway/streams/turns.py). A batch is never empty. Events that arrived together travel
# together: each layer of the pipeline and each write to the client costs once per read,
# not once per event.
EventBatches = AsyncIterator[Iterable[pb.StreamResponse]]


class Backend(Protocol):
    config: BackendConfig
    @property
    def dialect(self) -> Dialect:
        """The backend's dialect (translators/dialects)."""
        ...

    async def unary(self, call: Call) -> ProtoMessage | None: ...

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None: ...

    def stream(self, call: Call) -> EventBatches: ...

    async def close(self) -> None: ...


def backend_codec(call: Call, backend: Backend, *, forward: bool = False,
                  loss: LossReport | None = None) -> BackendCodec:
    """The call encoded for ``backend`` by its dialect (the one way all three egress
    modules ask for it); ``forward``: the client's own request, as it came; ``loss``: a
    report of its own instead of the call's."""
    return backend.dialect.backend(call.op, call.request,
                                   call.ctx.loss if loss is None else loss,
                                   backend.config.tenant,
                                   call.backend_card, call.ctx.facts.extensions,
                                   subscribe_verb=backend.config.subscribe_verb,
                                   wire=call.wire if forward else None)


def read_passed(call: Call, backend: Backend, answer: WireAnswer) -> ProtoMessage | None:
    """An answer passed through to the client, read the translated way after the client
    has it (a shadow copy compares it): what reading it loses is on a report of its own,
    not the call's, whose line is written."""
    codec = backend_codec(call, backend, forward=True, loss=LossReport())  # its request id
    return codec.read(answer.status, answer.body)


def passed_through(codec: BackendCodec, status: int, content_type: str,
                   raw: bytes) -> WireAnswer | ProtoMessage | None:
    """A forwarded call's answer: as it came when it may reach the client so, else read
    the translated way (an error, or a wrong answer), so that it is checked, logged,
    counted and rendered the one way errors are."""
    answer = codec.forwarded(status, content_type, raw)
    return answer if answer is not None else codec.read(status, raw)


def backend_headers(call: Call, config: BackendConfig) -> dict[str, str]:
    """Headers for one backend call: configured ones and forwarded ones (which of the two
    wins a name both have is `header_precedence`), the request id, version, extensions."""
    if config.header_precedence == "backend":
        headers = {**call.ctx.backend_headers, **config.headers}
    else:
        headers = {**config.headers, **call.ctx.backend_headers}
    headers["x-request-id"] = call.ctx.facts.request_id
    version = config.version or V10
    headers.update(BACKEND_HEADERS[version])
    if call.ctx.facts.extensions:
        value = ",".join(call.ctx.facts.extensions)
        for name in EXTENSION_HEADERS[version]:
            headers[name] = value
    headers.update(tracing.outgoing(call.ctx))  # traceparent/tracestate
    return headers


def _where(call: Call) -> str:
    return f"tenant {call.ctx.tenant or '(default)'}, request {call.ctx.facts.request_id}"


class BackendGone(A2AError):
    """BackendUnavailableError made by the gateway itself: the backend could not be
    reached, or its connection broke (refused, reset, closed mid-answer). Not an answer of
    the backend's (which may name the same error): a stream that meets it mid-task is
    re-attached (gateway/streams/reattach.py). ``sent`` is False when the connection
    could not be opened, so nothing of the call reached the backend (the migration's
    canary may then send a new conversation to the primary: gateway/migration)."""

    sent: bool = True


def backend_unavailable(call: Call, config: BackendConfig, detail: str,
                        sent: bool = True) -> A2AError:
    log.warning("backend unavailable", tenant=call.ctx.tenant, request_id=call.ctx.facts.request_id,
                backend=config.url or config.card, detail=detail, sent=sent)
    gone = BackendGone(BY_NAME["BackendUnavailableError"],
                       f"the backend is unavailable ({_where(call)})",
                       {"tenant": call.ctx.tenant or ""})
    gone.sent = sent
    return gone


def backend_timeout(call: Call, config: BackendConfig, seconds: float, what: str) -> A2AError:
    log.warning("backend timeout", tenant=call.ctx.tenant, request_id=call.ctx.facts.request_id,
                backend=config.url or config.card, waited=what, seconds=seconds)
    return a2a_error("BackendTimeoutError", f"the backend did not answer in time: {what} "
                     f"({seconds:g} s; {_where(call)})", tenant=call.ctx.tenant or "")


def bad_response(call: Call, config: BackendConfig, detail: str) -> A2AError:
    log.warning("backend answer refused", tenant=call.ctx.tenant,
                request_id=call.ctx.facts.request_id, backend=config.url or config.card,
                detail=detail)
    return a2a_error("InvalidAgentResponseError", f"the backend sent an invalid response: "
                     f"{detail} ({_where(call)})", tenant=call.ctx.tenant or "")


def too_large(call: Call, config: BackendConfig) -> A2AError:
    return bad_response(call, config, f"the answer is larger than {config.max_answer_bytes} "
                        f"bytes (max_answer_bytes)")
