"""Stream helpers: time bounds on a backend's events, and v0.3 `final` marking."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_timeout
from translators.j03.objects import INTERRUPTED_STATES, TERMINAL_STATES

TERMINAL = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES)
_ENDS_V03_STREAM = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES | INTERRUPTED_STATES)


def ends_v03_stream(item: pb.StreamResponse) -> bool:
    return item.HasField("status_update") and item.status_update.status.state in _ENDS_V03_STREAM


def ends_stream(state: int) -> bool:
    """A terminal or interrupted task state: the stream that reports it is over."""
    return state in _ENDS_V03_STREAM


async def with_final_flags(source: AsyncIterator[pb.StreamResponse], lookahead: float,
                           ) -> AsyncGenerator[tuple[pb.StreamResponse, bool], None]:
    """Pair each event with the `final` flag a v0.3 client expects (reference §3.6).

    A status update is final when its state ends a stream, or when it is the last event
    before the backend closes. To know the latter, a non-final status update waits up
    to ``lookahead`` seconds for the next event; past that it goes out as not final, so
    a quiet backend never delays what the client sees by more than ``lookahead``.
    """
    nxt: asyncio.Future[pb.StreamResponse | None] | None = None
    try:
        pending = await anext(source, None)
        while pending is not None:
            if pending.HasField("status_update") and not ends_v03_stream(pending):
                nxt = asyncio.ensure_future(anext(source, None))
                done, _ = await asyncio.wait({nxt}, timeout=lookahead)
                if done:
                    error = nxt.exception()
                    if error is not None:  # what came before the failure still goes out
                        nxt = None
                        yield pending, False
                        raise error
                    following = nxt.result()
                    yield pending, following is None
                else:
                    yield pending, False
                    following = await nxt
                nxt = None
            else:
                yield pending, ends_v03_stream(pending)
                following = await anext(source, None)
            pending = following
    finally:
        if nxt is not None and not nxt.done():
            nxt.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await nxt


async def without_final_flags(source: AsyncIterator[pb.StreamResponse],
                              ) -> AsyncGenerator[tuple[pb.StreamResponse, bool], None]:
    async for item in source:
        yield item, False


async def bounded_stream(source: AsyncIterator[pb.StreamResponse], call: Call,
                         config: BackendConfig) -> AsyncGenerator[pb.StreamResponse, None]:
    """``source``, bounded in time: its first event within `first_event_timeout`, each
    next one within `stream_idle_timeout`, and all of it within `stream_max_duration`
    (0: no total bound). Past a bound the stream ends with BackendTimeoutError, and the
    backend's stream is closed."""
    loop = asyncio.get_running_loop()
    end = loop.time() + config.stream_max_duration if config.stream_max_duration else None
    wait, what = config.first_event_timeout, "the first event"
    try:
        while True:
            seconds, shown, waiting_for = wait, wait, what
            if end is not None and end - loop.time() < wait:
                seconds = max(0.0, end - loop.time())
                shown, waiting_for = config.stream_max_duration, "stream_max_duration reached"
            try:
                async with asyncio.timeout(seconds):
                    item = await anext(source)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise backend_timeout(call, config, shown, waiting_for) from None
            wait, what = config.stream_idle_timeout, "the next event"
            yield item
    finally:
        await source.aclose()  # type: ignore[attr-defined]
