"""Stream helpers: the end of a stream, and v0.3 `final` marking."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Iterator

from a2a.types import a2a_pb2 as pb

from gateway.egress.base import EventBatches
from translators.versions import V03
from translators.vocabulary import ends_stream

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
            final = ends_stream(item.status_update.status.state)
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


def final_flags_for(client_version: str, source: EventBatches) -> AsyncGenerator[Flagged, None]:
    """``source``'s reads with each event's `final` flag: v0.3 clients need it on the
    last status (reference §3.6); v1.0 has no `final` (every flag False)."""
    if client_version == V03:
        return with_final_flags(source)
    return without_final_flags(source)
