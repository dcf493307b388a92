"""Stream helpers: time bounds on a backend's events, and v0.3 `final` marking."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable, Iterator

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.egress.base import EventBatches, backend_timeout
from gateway.streams.deadline import Deadline
from translators.versions import V03
from translators.vocabulary import ends_v03_stream

FlaggedEvent = tuple[pb.StreamResponse, bool]  # an event and its v0.3 `final` flag
Flagged = Iterable[FlaggedEvent]  # a read's events, flagged


class _FinalFlags:
    """The `final` flag of each event of one stream, read by read."""

    __slots__ = ("unended",)

    def __init__(self) -> None:
        # The last status update, when it did not end the stream and nothing came after.
        self.unended: pb.StreamResponse | None = None

    def flagged(self, events: Iterable[pb.StreamResponse]) -> Iterator[FlaggedEvent]:
        for item in events:
            final = ends_v03_stream(item)
            yield item, final
            self.unended = item if item.HasField("status_update") and not final else None


async def with_final_flags(source: EventBatches) -> AsyncGenerator[Flagged, None]:
    """Pair each event with the `final` flag a v0.3 client expects (reference §3.6).

    A status update is final when its state ends a stream. When the backend closes the
    stream right after a status update that did not end it, that update is sent again,
    marked final: every event goes out as soon as it comes, and nothing waits to learn
    whether an update was the last.
    """
    flags = _FinalFlags()
    try:
        async for events in source:
            yield flags.flagged(events)
    finally:
        await close_stream(source)
    if flags.unended is not None:
        yield ((flags.unended, True),)


def final_flags_for(client_version: str, source: EventBatches) -> AsyncGenerator[Flagged, None]:
    """``source``'s reads with each event's `final` flag: v0.3 clients need it on the
    last status (reference §3.6); v1.0 has no `final` (every flag False)."""
    if client_version == V03:
        return with_final_flags(source)
    return without_final_flags(source)


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


async def bounded_stream(source: EventBatches, call: Call, config: BackendConfig,
                         ) -> AsyncGenerator[Iterable[pb.StreamResponse], None]:
    """``source``, bounded in time: its first event within `first_event_timeout`, each
    next read within `stream_idle_timeout`, and all of it within `stream_max_duration`
    (0: no total bound). Past a bound the stream ends with BackendTimeoutError, and the
    backend's stream is closed."""
    loop = asyncio.get_running_loop()
    end = loop.time() + config.stream_max_duration if config.stream_max_duration else None
    wait, what = config.first_event_timeout, "the first event"
    shown, waiting_for = wait, what
    try:
        # One deadline for the whole stream, re-armed per read (gateway/streams/deadline.py);
        # disarmed while the consumer holds a read's events (not the backend's time).
        async with Deadline() as deadline:
            while True:
                seconds, shown, waiting_for = wait, wait, what
                if end is not None and end - loop.time() < wait:
                    seconds = max(0.0, end - loop.time())
                    shown, waiting_for = config.stream_max_duration, "stream_max_duration reached"
                deadline.arm(seconds)
                try:
                    events = await anext(source)
                except StopAsyncIteration:
                    return
                deadline.disarm()
                wait, what = config.stream_idle_timeout, "the next event"
                yield events
    except TimeoutError:
        raise backend_timeout(call, config, shown, waiting_for) from None
    finally:
        await close_stream(source)
