"""Waiting for a condition instead of sleeping for a guessed time: the one bounded poll
the tests use. It returns as soon as the condition holds (a fast machine waits less) and
fails with what it waited for once ``timeout`` seconds or ``timeout / interval`` polls
have passed (a loaded machine gets the whole bound, not a guess tuned on a quiet one).

A sleep stays where the time is the thing under test (a slow backend, a keep-alive
that must run out) or where a test shows that something does NOT happen: there is no
condition to wait for, only a quiet period.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def _polls(timeout: float, interval: float) -> int:
    return max(1, math.ceil(timeout / interval)) + 1


def _failed(what: str, timeout: float, last: object) -> AssertionError:
    return AssertionError(f"not within {timeout} s: {what or 'the condition'} "
                          f"(last seen: {last!r})"[:3000])


async def wait_until(condition: Callable[[], T | Awaitable[T]], what: str = "", *,
                     timeout: float = 10.0, interval: float = 0.02) -> T:
    """The condition's first truthy value (``condition`` may be a coroutine function)."""
    deadline = time.monotonic() + timeout
    value: object = None
    for _ in range(_polls(timeout, interval)):
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(interval)
    raise _failed(what, timeout, value)


def wait_until_sync(condition: Callable[[], T], what: str = "", *, timeout: float = 10.0,
                    interval: float = 0.05) -> T:
    """The same, blocking: for tests and fixtures outside the event loop (a process, a
    file another process writes)."""
    deadline = time.monotonic() + timeout
    value: T | None = None
    for _ in range(_polls(timeout, interval)):
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise _failed(what, timeout, value)


async def timers_due_after(seconds: float) -> None:
    """Return once the running loop has run the callbacks due ``seconds`` from now: the
    loop runs its timers in the order they are due, so a timer armed before for an
    earlier time has run (for code that defers work by a fixed delay)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_later(seconds, done.set_result, None)
    await done
