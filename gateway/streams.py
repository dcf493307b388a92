"""Stream helpers shared by the ingress codecs: peeking and v0.3 `final` marking."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from a2a.types import a2a_pb2 as pb

from translators.j03.objects import INTERRUPTED_STATES, TERMINAL_STATES

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
