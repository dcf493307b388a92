"""Serving a canonical stream to an HTTP client as SSE (JSON-RPC and REST share this):
the stream driver's SSE sink (gateway/streams/driver.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from a2a.types import a2a_pb2 as pb
from aiohttp import web

from gateway.call import Call
from gateway.ingress.common import GATEWAY_KEY, dialect_headers, gateway_of
from gateway.ingress.connections import answer_started, connection_of
from gateway.observability.logs.access import answered_early, client_gone
from gateway.streams import turns
from gateway.streams.detach import LeavesAtDrain, held, kept
from gateway.streams.driver import drive
from gateway.streams.sse import SSE_HEADERS
from translators.dialects.contract import SseClientCodec
from translators.errors import A2AError
from translators.sse import event_fields

# The plain answer to an error before the first event; None: a stream of that error.
AnswerError = Callable[[A2AError], web.StreamResponse | None]


def serve_sse(request: web.Request, call: Call, codec: SseClientCodec,
              answer_error: AnswerError) -> Awaitable[web.StreamResponse]:
    """Run the call's stream and write each event as the client's codec frames it.

    An error before the first event is answered by ``answer_error`` (a plain error in the
    client's dialect), or, when it gives None, as a stream holding only the error frame; a
    later error becomes a final error frame. A client that goes away closes the backend
    stream. Not a coroutine of its own: each coroutine around a stream is resumed at each
    of its waits (bench/README.md, "One stream driver").
    """
    gateway = gateway_of(request)
    journal = gateway.config.state.journal
    sink = SseSink(request, call, codec, answer_error, journal.retry if journal.enabled else 0.0)
    driving = drive(call, gateway.stream(call), sink, request.app[GATEWAY_KEY].streams,
                    call.ctx.facts.binding, gateway.config.limits.write_timeout,
                    sink.leave if journal.holds else None)
    if journal.holds:
        conn = connection_of(request)
        if conn is not None and conn.keeps_handlers:
            return kept(driving, call, journal, sink, conn, lambda: client_gone(request))
    return held(driving, call, journal, sink)


class SseSink(LeavesAtDrain):
    """Frames kept until a turn's worth is written in one write (a write costs the worker
    as much as a few events); the first frames at once. The response starts with the
    first write, so that an error before it is still a plain error answer."""

    each_event = False
    answers_early_drain = True

    def __init__(self, request: web.Request, call: Call, codec: SseClientCodec,
                 answer_error: AnswerError, retry: float = 0.0) -> None:
        self.request, self.call = request, call
        self.frame_error, self.answer_error = codec.error_frame, answer_error
        self.response = web.StreamResponse(headers={**SSE_HEADERS,
                                                    **dialect_headers(call.ctx)})
        self.opened = False
        self.frames: list[bytes] = []  # framed, not written yet
        # The reconnection delay (ms) a journaled stream's first event suggests
        # (translators/sse.py, event_fields).
        self.retry: int | None = round(retry * 1000) if retry else None
        append = self.frames.append
        frame_item, loss = codec.event_frame, call.ctx.loss

        def frame(item: pb.StreamResponse, final: bool, event_id: str | None = None) -> None:
            if event_id is None:
                append(frame_item(item, final, loss))
            else:
                append(event_fields(event_id, self.retry) + frame_item(item, final, loss))
                self.retry = None

        self.frame = frame  # a closure, not a method: one attribute lookup less per event
        self._loop = asyncio.get_running_loop()
        self.written = 0.0  # the loop's time of the last write
        LeavesAtDrain.__init__(self)  # the handler ends the response at the drain

    async def end_for_client(self) -> web.StreamResponse:
        """The drain's end for the client, the driver reading on without it. Its
        connection closes with it: the client's next call opens another, which a gateway
        that is not shutting down takes."""
        self.response.force_close()
        await self.response.write_eof()
        answered_early(self.request, self.response)
        return self.response

    async def flush(self, due: bool) -> None:
        frames = self.frames
        if not frames:
            return
        if self.left:  # the journal has them; the client resumes from its last id
            frames.clear()
            return
        now = self._loop.time()
        first = not self.opened
        if first:
            await self._open()
        elif not due and self.keeps():
            # The short turns while a call starts keep their frames for the next write
            # unless a turn has passed since the last one; nothing waits for a read with
            # frames kept (``due`` at the end of each read).
            return
        self.written = now
        # Emptied before the wait: a cancelled write is not sent twice.
        data = b"".join(frames)
        frames.clear()
        self.writing = True
        try:
            await self.response.write(data)
        finally:
            self.wrote()
        if first:
            answer_started(self.request)  # the first event is out

    def keeps(self) -> bool:
        return self.opened and self._loop.time() - self.written < turns.TURN

    async def _open(self) -> None:
        await self.response.prepare(self.request)
        self.opened = True

    async def fail(self, err: A2AError) -> None:
        if self.left:
            return
        if not self.opened:
            answered = self.answer_error(err)
            if answered is not None:
                self.response = answered
                return
            await self._open()
        await self.response.write(self.frame_error(err))
        await self.response.write_eof()

    async def finish(self) -> None:
        if self.left:
            return
        if self.frames:  # a shutdown's: the events already framed go out
            await self.flush(True)
        if not self.opened:
            await self._open()
        await self.response.write_eof()

    def drop(self) -> None:
        if self.request.transport is not None:
            self.request.transport.close()

    def result(self) -> web.StreamResponse:
        return self.response
