"""Stream helpers: the end of a stream, and v0.3 `final` marking."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Iterator

from a2a.types import a2a_pb2 as pb

from gateway.egress.base import EventBatches
from translators.j03.objects import INTERRUPTED_STATES, TERMINAL_STATES

TERMINAL = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES)
_ENDS_V03_STREAM = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES | INTERRUPTED_STATES)


def ends_v03_stream(item: pb.StreamResponse) -> bool:
    return item.HasField("status_update") and item.status_update.status.state in _ENDS_V03_STREAM


def ends_stream(state: int) -> bool:
    """A terminal or interrupted task state: the stream that reports it is over."""
    return state in _ENDS_V03_STREAM


FlaggedEvent = tuple[pb.StreamResponse, bool]  # an event and its v0.3 `final` flag
Flagged = Iterable[FlaggedEvent]  # a read's events, flagged


class FinalFlags:
    """The `final` flag a v0.3 client expects on each event (reference §3.6): a status
    update is final when its state ends a stream. When the backend closes the stream
    right after a status update that did not end it, that update is sent again, marked
    final (:attr:`unended`): every event goes out as soon as it comes, and nothing waits
    to learn whether an update was the last. The stream driver asks it per event
    (gateway/streams/driver.py)."""

    __slots__ = ("unended",)

    def __init__(self) -> None:
        # The last status update, when it did not end the stream and nothing came after.
        self.unended: pb.StreamResponse | None = None

    def flag(self, item: pb.StreamResponse) -> bool:
        # ends_v03_stream, inline: asked for every event of every v0.3 client's stream.
        if item.HasField("status_update"):
            final = item.status_update.status.state in _ENDS_V03_STREAM
            self.unended = None if final else item
            return final
        self.unended = None
        return False

    def flagged(self, events: Iterable[pb.StreamResponse]) -> Iterator[FlaggedEvent]:
        for item in events:
            yield item, self.flag(item)


async def with_final_flags(source: EventBatches) -> AsyncGenerator[Flagged, None]:
    """The stream driver's `final` flags (:class:`FinalFlags`) for a reader of batches:
    pair each event with the `final` flag a v0.3 client expects (reference §3.6).

    A status update is final when its state ends a stream. When the backend closes the
    stream right after a status update that did not end it, that update is sent again,
    marked final: every event goes out as soon as it comes, and nothing waits to learn
    whether an update was the last.
    """
    flags = FinalFlags()
    try:
        async for events in source:
            yield flags.flagged(events)
    finally:
        await close_stream(source)
    if flags.unended is not None:
        yield ((flags.unended, True),)


async def without_final_flags(source: EventBatches) -> AsyncGenerator[Flagged, None]:
    try:
        async for events in source:
            yield ((item, False) for item in events)
    finally:
        await close_stream(source)


async def close_stream(source: EventBatches) -> None:
    """Close the stream a wrapper reads, whenever the wrapper ends: `async for` does not,
    and a stream left open (its backend connection, its slots) is closed only when the
    collector finds it, or at the loop's end, concurrently with the streams it wraps (a
    RuntimeError "generator didn't stop after athrow()" at shutdown)."""
    await source.aclose()  # type: ignore[attr-defined]
