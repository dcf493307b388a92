"""The streams open now (the registry that shutdown drains)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from gateway.observability.metrics import OPEN_STREAMS
from gateway.streams.turns import Openings

_CUT = 1.0  # seconds the drain waits for the held streams it cancelled at its deadline


class Streams:
    """The streams open now, so that shutdown can end them cleanly: each stream's task is
    cancelled with `draining` set, and the SSE writer then closes the response properly
    instead of dropping the connection. A stream inside a step that must not be cut
    (`uncut`: a gRPC write) is not cancelled; it stops the same way once the step is done.
    A journaled stream that can be read on for its client's resume (`on_drain`) is not
    cancelled either: it ends for its client by itself and is read on into the journal
    until the drain's deadline (docs/streams.md, "At shutdown").
    Their serving loops let the calls starting on the same worker (`openings`) go first
    (gateway/streams/turns.py)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._uncut: set[asyncio.Task[Any]] = set()
        self._leaves: dict[asyncio.Task[Any], Callable[[], bool]] = {}
        self._held: set[asyncio.Task[Any]] = set()  # read on past the drain's start
        self.draining = False
        self.openings = Openings()

    @contextlib.contextmanager
    def track(self, binding: str) -> Iterator[None]:
        task = asyncio.current_task()
        assert task is not None
        if self.draining:
            # It began after the drain cancelled the others: it ends the same way, at its
            # next wait.
            task.cancel()
        self._tasks.add(task)
        OPEN_STREAMS.labels(binding).inc()
        try:
            yield
        finally:
            self._tasks.discard(task)
            self._leaves.pop(task, None)
            OPEN_STREAMS.labels(binding).dec()

    @contextlib.contextmanager
    def uncut(self) -> Iterator[None]:
        """A step the drain lets finish, then ends the stream where the step ends (raises
        CancelledError, as the drain's cancellation would have), or, a stream that can be
        read on (`on_drain`), ends it for its client there and lets it go on. A gRPC
        write cancelled half-done leaves its send pending in gRPC's core, which then
        refuses the status that ends the stream (GRPC_CALL_ERROR_TOO_MANY_OPERATIONS):
        the call stays open until the server's grace runs out and its client gets
        UNAVAILABLE."""
        task = asyncio.current_task()
        assert task is not None
        self._uncut.add(task)
        try:
            yield
        finally:
            self._uncut.discard(task)
        if self.draining and task not in self._held:
            leave = self._leaves.pop(task, None)
            if leave is None or not leave():
                raise asyncio.CancelledError
            self._held.add(task)

    def on_drain(self, leave: Callable[[], bool]) -> None:
        """The current stream's own end at the drain: ``leave()`` ends it for its client
        and says whether the stream goes on (read on into its journal); when it says no,
        the drain cancels the stream as any other."""
        task = asyncio.current_task()
        assert task is not None
        self._leaves[task] = leave

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float) -> None:
        """End every stream and wait ``timeout`` seconds at most for them; the streams
        read on past their client's end are cancelled then."""
        self.draining = True
        for task in self._tasks - self._uncut:  # those in a step end at its end (uncut)
            leave = self._leaves.pop(task, None)
            if leave is not None and leave():
                self._held.add(task)
            else:
                task.cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._tasks and loop.time() < deadline:
            await asyncio.sleep(0.02)
        held = [task for task in self._held if not task.done()]
        self._held.clear()
        for task in held:
            task.cancel()
        if held:
            # A cancelled reader ends at its next step (its backend stream closed, its
            # slots given back): no network wait, bounded all the same.
            await asyncio.wait(held, timeout=_CUT)
