"""The rules a stream's events pass through, one object each, in a chain built once per
call (the stream driver, gateway/streams/driver.py, runs it).

A :class:`StreamFilter` takes one event and returns the events that go on in its place
(usually the event itself; zero or more), or raises an A2AError; at the end of the
backend's stream it may add events. The chain for a call depends only on the client's
version, the backend's version, the operation and the config (gateway/streams/plan.py),
so no rule asks again, per event, whether it applies. Besides the chain:

- :class:`Bounds`: how long the driver waits for each of the backend's reads;
- :class:`~gateway.streams.events.FinalFlags`: the v0.3 `final` flag of each event (the
  client's end of stream), asked after the chain;
- :class:`WrittenFirst`: a creating stream's task in the store before its first sight;
- the v0.3 backend's repairs: `SettledEnd` (a filter) and `task_first` (on the reads),
  gateway/streams/v03_repair.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.egress.base import backend_timeout
from gateway.streams.events import FinalFlags
from gateway.tasks.index import TaskIndex
from translators.errors import A2AError
from translators.versions import V03

Events = Sequence[pb.StreamResponse]


class StreamFilter(Protocol):
    def event(self, item: pb.StreamResponse) -> Events:
        """The events that go on in ``item``'s place; raises A2AError to end the stream."""
        ...

    async def end(self) -> Events:
        """Events to add when the backend's stream has ended (not after an error)."""
        ...


class Chain:
    """Filters applied in order: what one returns goes to the next."""

    __slots__ = ("event", "filters")

    def __init__(self, filters: Sequence[StreamFilter]) -> None:
        self.filters = tuple(filters)
        # One filter (a v1.0 backend's chain): its own method, no call around it.
        self.event: Callable[[pb.StreamResponse], Events] = (
            self.filters[0].event if len(self.filters) == 1 else self._through)

    def _through(self, item: pb.StreamResponse) -> Events:
        items: Events = (item,)
        for step in self.filters:
            if len(items) == 1:
                items = step.event(items[0])
            else:
                items = [out for each in items for out in step.event(each)]
        return items

    async def end(self) -> Events:
        """What the filters add at the end, each through the filters after it."""
        added: list[pb.StreamResponse] = []
        for step in self.filters:
            added = [out for each in added for out in step.event(each)]
            added.extend(await step.end())
        return added


class Counted:
    """Each event counted in the call's outcome and shown to the task index (a Task or a
    status update is recorded there)."""

    __slots__ = ("call", "outcome", "tasks")

    def __init__(self, call: Call, tasks: TaskIndex) -> None:
        self.call, self.outcome, self.tasks = call, call.ctx.outcome, tasks

    def event(self, item: pb.StreamResponse) -> Events:
        self.outcome.events += 1
        self.tasks.streamed(self.call, item)
        return (item,)

    async def end(self) -> Events:
        return ()


class WrittenFirst:
    """A creating stream (README "State": other processes read the index) shows its task
    only once the task is in the store: each event, until one shows the task, is held
    until it is written."""

    __slots__ = ("call", "done", "tasks")

    def __init__(self, call: Call, tasks: TaskIndex) -> None:
        self.call, self.tasks, self.done = call, tasks, False

    async def before(self, item: pb.StreamResponse) -> None:
        self.done = await self.tasks.wrote_first(self.call, item)


class Gate(Protocol):
    """What holds a stream's events until it is done (WrittenFirst, a stage's watcher)."""

    @property
    def done(self) -> bool: ...

    async def before(self, item: pb.StreamResponse) -> None: ...


class Watcher(Gate, StreamFilter, Protocol):
    """A stage's look at a stream: a filter, and a gate until it is done."""


class Gates:
    """Two gates, in order: done when both are."""

    __slots__ = ("first", "second")

    def __init__(self, first: Gate, second: Gate) -> None:
        self.first, self.second = first, second

    @property
    def done(self) -> bool:
        return self.first.done and self.second.done

    async def before(self, item: pb.StreamResponse) -> None:
        if not self.first.done:
            await self.first.before(item)
        if not self.second.done:
            await self.second.before(item)


class Bounds:
    """How long each read of the backend's stream may take: the first within
    `first_event_timeout`, each next within `stream_idle_timeout`, all of them within
    `stream_max_duration` (0: no total bound). Times are the event loop's."""

    __slots__ = ("config", "end", "shown", "wait", "waiting_for", "what")

    def __init__(self, config: BackendConfig, now: float) -> None:
        self.config = config
        self.end = now + config.stream_max_duration if config.stream_max_duration else None
        self.wait, self.what = config.first_event_timeout, "the first event"
        self.shown, self.waiting_for = self.wait, self.what

    def next_read(self, now: float) -> float:
        """Seconds the next read may take, from ``now``; the reads after it are bounded
        by `stream_idle_timeout`."""
        seconds, self.shown, self.waiting_for = self.wait, self.wait, self.what
        self.wait, self.what = self.config.stream_idle_timeout, "the next event"
        if self.end is not None and self.end - now < seconds:
            seconds = max(0.0, self.end - now)
            self.shown, self.waiting_for = (self.config.stream_max_duration,
                                            "stream_max_duration reached")
        return seconds

    def timed_out(self, call: Call) -> A2AError:
        return backend_timeout(call, self.config, self.shown, self.waiting_for)


def final_flags(call: Call) -> FinalFlags | None:
    """The client's `final` flags: v0.3 clients only (v1.0 has no such flag)."""
    return FinalFlags() if call.ctx.client_version == V03 else None
