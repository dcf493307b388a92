"""The streams open now (the registry that shutdown drains)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from gateway.observability.metrics import OPEN_STREAMS
from gateway.streams.turns import Openings


class Streams:
    """The streams open now, so that shutdown can end them cleanly: each stream's task is
    cancelled with `draining` set, and the SSE writer then closes the response properly
    instead of dropping the connection. A stream inside a step that must not be cut
    (`uncut`: a gRPC write) is not cancelled; it stops the same way once the step is done.
    Their serving loops let the calls starting on the same worker (`openings`) go first
    (gateway/streams/turns.py)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._uncut: set[asyncio.Task[Any]] = set()
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
            OPEN_STREAMS.labels(binding).dec()

    @contextlib.contextmanager
    def uncut(self) -> Iterator[None]:
        """A step the drain lets finish, then ends the stream where the step ends (raises
        CancelledError, as the drain's cancellation would have). A gRPC write cancelled
        half-done leaves its send pending in gRPC's core, which then refuses the status
        that ends the stream (GRPC_CALL_ERROR_TOO_MANY_OPERATIONS): the call stays open
        until the server's grace runs out and its client gets UNAVAILABLE."""
        task = asyncio.current_task()
        assert task is not None
        self._uncut.add(task)
        try:
            yield
        finally:
            self._uncut.discard(task)
        if self.draining:
            raise asyncio.CancelledError

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float) -> None:
        self.draining = True
        for task in self._tasks - self._uncut:  # those in a step end at its end (uncut)
            task.cancel()
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
