"""Serving a canonical stream to an HTTP client as SSE (JSON-RPC and REST share this)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator

from a2a.types import a2a_pb2 as pb
from aiohttp import web

from gateway.call import Call
from gateway.ingress.common import GATEWAY_KEY, dialect_headers, gateway_of
from gateway.ingress.connections import answer_started
from gateway.observability.observe import log_call
from gateway.streams import turns
from gateway.streams.deadline import Deadline
from gateway.streams.events import Flagged, FlaggedEvent, final_flags_for
from gateway.streams.sse import SSE_HEADERS
from gateway.streams.turns import Turn
from translators.errors import A2AError, a2a_error

# How long a v0.3 client's status update may wait to learn whether it is the last one.

FrameItem = Callable[[pb.StreamResponse, bool], bytes]
FrameError = Callable[[A2AError], bytes]
# The plain answer to an error before the first event; None: a stream of that error.
AnswerError = Callable[[A2AError], web.StreamResponse | None]


async def serve_sse(request: web.Request, call: Call, frame_item: FrameItem,
                    frame_error: FrameError, answer_error: AnswerError,
                    ) -> web.StreamResponse:
    """Run the call's stream and write each event as the client's dialect frames it.

    An error before the first event is answered by ``answer_error`` (a plain error in the
    client's dialect), or, when it gives None, as a stream holding only the error frame; a
    later error becomes a final error frame. A client that goes away closes the backend
    stream, because closing `items` closes the pipeline's iterator.
    """
    ctx = call.ctx
    gateway = gateway_of(request)
    source = gateway.stream(call)
    reads = final_flags_for(ctx.client_version, source)
    first_error: A2AError | None = None
    streams = request.app[GATEWAY_KEY].streams  # type: ignore[attr-defined]
    try:
        # Tracked from here: at shutdown a stream still waiting for its first event is
        # answered too, not left to the connection drain's reset after the grace.
        with streams.track(ctx.client_binding):
            events = await _opening(reads)
    except asyncio.CancelledError:
        if not streams.draining:
            await reads.aclose()
            raise
        asyncio.current_task().uncancel()  # type: ignore[union-attr]
        events = None
        first_error = a2a_error("BackendUnavailableError", "the gateway is shutting down "
                                "before the stream's first event; retry")
        log_call(ctx, call.op.name, first_error)
    except Exception as exc:  # A2AError, or a bug of ours: answer in the client's dialect
        events = None
        first_error = exc if isinstance(exc, A2AError) else a2a_error("InternalError")
        log_call(ctx, call.op.name, exc)
    except BaseException:
        await reads.aclose()
        raise
    if first_error is not None:
        await reads.aclose()
        answered = answer_error(first_error)
        if answered is not None:
            return answered
    response = web.StreamResponse(headers={**SSE_HEADERS, **dialect_headers(ctx)})
    await response.prepare(request)
    if first_error is not None:
        await response.write(frame_error(first_error))
        await response.write_eof()
        return response
    opening = True
    frames: list[bytes] = []  # framed, not written yet
    write_timeout = gateway.config.limits.write_timeout
    error: BaseException | None = None
    try:
        # A client that stops reading must not hold the stream (and its backend
        # connection) for ever: each write is bounded by one deadline per stream.
        with streams.track(ctx.client_binding):
            async with Deadline() as deadline:

                async def write(frames: list[bytes]) -> None:
                    if frames:
                        # Emptied before the wait: a cancelled write is not sent twice.
                        data = b"".join(frames)
                        frames.clear()
                        deadline.arm(write_timeout)
                        await response.write(data)
                        deadline.disarm()

                # Others run too while a read's events are written; starting calls first.
                turn = Turn(streams.openings)
                loop = asyncio.get_running_loop()
                written = loop.time()
                while events is not None:
                    try:
                        read_all = _frame_turn(events, frame_item, turn, frames)
                    except Exception:
                        await write(frames)  # the events before the error go first
                        raise
                    # One write per turn's worth of events, not one per event: the short
                    # turns while a call starts keep theirs for the next (a write costs
                    # the worker as much as a few events). Nothing waits for a read with
                    # frames kept.
                    now = loop.time()
                    if read_all or opening or now - written >= turns.TURN:
                        await write(frames)
                        written = now
                    if opening:
                        opening = False
                        answer_started(request)  # the first event is out
                    if turn.over():
                        await turn.pass_on()
                    if read_all:
                        batch = await anext(reads, None)
                        events = None if batch is None else iter(batch)
    except asyncio.CancelledError as exc:
        if not streams.draining:
            error = exc  # the client went away: logged and counted as CLIENT_CANCELLED
            raise
        # The gateway is shutting down: end the stream properly, not by a reset, the
        # events already framed included.
        asyncio.current_task().uncancel()  # type: ignore[union-attr]
        if frames:
            await response.write(b"".join(frames))
    except TimeoutError as exc:
        error = exc  # the client stopped reading: drop the connection
        if request.transport is not None:
            request.transport.close()
        return response
    except Exception as exc:
        error = exc
        if isinstance(exc, ConnectionError):
            # The client went away mid-write: its doing, as a cancellation is, not a
            # failure of ours (no error line with a traceback).
            error = asyncio.CancelledError()
            return response
        await response.write(frame_error(exc if isinstance(exc, A2AError)
                                         else a2a_error("InternalError")))
    finally:
        await reads.aclose()
        log_call(ctx, call.op.name, error)
        if isinstance(error, asyncio.CancelledError):
            # Its traceback holds this frame: keeping it here would make a cycle that
            # only the collector frees (full collections stall the loop when 10,000
            # streams are open).
            error = None
    await response.write_eof()
    return response


async def _opening(reads: AsyncIterator[Flagged]) -> Iterator[FlaggedEvent] | None:
    """The first read's events, the first one already taken, so that an error before the
    first event can still be answered as a plain error; None for a stream without one."""
    async for events in reads:
        rest = iter(events)
        for first in rest:
            return itertools.chain((first,), rest)
    return None


def _frame_turn(events: Iterator[FlaggedEvent], frame_item: FrameItem, turn: Turn,
                frames: list[bytes]) -> bool:
    """Frame ``events`` into ``frames`` until they or the turn run out; True when all
    of them have been."""
    for item, final in events:
        frames.append(frame_item(item, final))
        if turn.over():
            return False
    return True
