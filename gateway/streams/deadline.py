"""A time bound re-armed for every event of a stream at the cost of a float assignment.

`asyncio.timeout` per event inserts and cancels a timer-heap entry each time, which is a
measurable part of a streamed event's cost. A :class:`Deadline` keeps one timer per
stream; when it fires it re-arms itself at the current deadline or, if that has passed,
cancels the task at once (it is then suspended in the awaited operation, since arming
and disarming happen around that await), and the scope turns that cancellation into
TimeoutError as `asyncio.timeout` does. Between :meth:`arm` and :meth:`disarm` the bound
applies; outside them nothing can expire.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType


class Deadline:
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._when = math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    async def __aenter__(self) -> Deadline:
        self._task = asyncio.current_task()
        if self._task is None:
            raise RuntimeError("a Deadline must be used inside a task")
        self._cancelling = self._task.cancelling()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.disarm()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        assert self._task is not None
        if (self._expired and kind is asyncio.CancelledError
                and self._task.uncancel() <= self._cancelling):
            raise TimeoutError from exc

    def arm(self, seconds: float) -> None:
        """What is awaited from now on ends in TimeoutError ``seconds`` from now."""
        self._when = when = self._loop.time() + seconds
        if self._timer is None or self._timer.when() > when:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(when, self._check)

    def disarm(self) -> None:
        self._when = math.inf

    def _check(self) -> None:
        self._timer = None
        if self._when == math.inf or self._expired:
            return
        if self._loop.time() >= self._when:
            self._expired = True
            assert self._task is not None
            self._task.cancel()
        else:
            self._timer = self._loop.call_at(self._when, self._check)
