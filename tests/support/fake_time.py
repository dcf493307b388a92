"""An event loop on a clock of its own, for the code timed by the loop (``loop.time()``,
``call_at``, ``asyncio.sleep``): the clock stands still while anything is ready to run and,
when nothing is, jumps to the next timer. Sleeps and timeouts take no real time, and a
test asserts the exact time a thing took, however loaded the machine.

Only for code with no real I/O: a socket's answer takes real time the clock does not see.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _Jumping(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector: polls without waiting, and moves the clock by the wait the
    loop asked for (the time to its next timer) when nothing is ready."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready: list[Any] = super().select(0)
        if ready:
            return ready
        if timeout is None:  # no timer: only another thread can wake the loop
            return list(super().select(None))
        self.now += max(timeout, 0.0)
        return []


class FakeTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._jumping = _Jumping()
        super().__init__(self._jumping)

    def time(self) -> float:
        return float(self._jumping.now)


def run_in_fake_time(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to its end on a FakeTimeLoop (a test's ``asyncio.run``)."""
    loop = FakeTimeLoop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()
