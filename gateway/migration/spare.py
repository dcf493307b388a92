"""The event loop's spare time: where a shadow copy does its work, so that it never runs
ahead of a client's call.

A copy is work nobody waits for, on the loop that serves the clients. Run as any task,
its steps take their turn in the loop's queue with the clients' and a client's call that
arrives behind them waits: shadowing every call of a busy gateway would slow its clients.
A copy asks for spare time before each of its heavier steps (sending the copy, comparing
the answers): it goes on at a pass of the loop that found nothing else to do (no callback
due, nothing read from a socket), one copy per pass, in the order they asked. A loop that
is never idle gives a copy its turn after at most :data:`MAX_PASSES` passes, so copies go
slower, never stop (they are bounded by ``shadow.max_concurrent``: more are skipped).

What is due on the loop is read from asyncio's own queue of ready callbacks, a private
attribute (``BaseEventLoop._ready``): this module is the one place that reads it
(tests/unit/gateway/migration/test_spare.py::test_asyncio_private_ready_queue_is_read_here
says whether it still exists). A loop without it (uvloop) gives every copy its turn at
once, as before this module existed.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Sized

MAX_PASSES = 16  # loop passes a copy waits at most for an idle one


def _ready_queue(loop: asyncio.AbstractEventLoop) -> Sized | None:
    ready = getattr(loop, "_ready", None)  # asyncio's private queue (see the docstring)
    return ready if isinstance(ready, deque) else None


class SpareTime:
    """The copies waiting for an idle pass of one loop; :meth:`wait` to be one of them."""

    def __init__(self, max_passes: int = MAX_PASSES) -> None:
        self.max_passes = max_passes
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._passes = 0  # passes the first waiter has waited
        self._polling = False

    async def wait(self) -> None:
        """Return at an idle pass of the running loop (or after :attr:`max_passes`)."""
        loop = asyncio.get_running_loop()
        ready = _ready_queue(loop)
        if ready is None:
            return
        turn: asyncio.Future[None] = loop.create_future()
        self._waiting.append(turn)
        if not self._polling:
            self._polling = True
            self._passes = 0
            loop.call_soon(self._poll, loop, ready)
        await turn  # cancelled: the poll drops it when it comes first

    def _poll(self, loop: asyncio.AbstractEventLoop, ready: Sized) -> None:
        """Once per pass of the loop while a copy waits: the first waiter's turn when
        nothing else is due in this pass (this callback is out of the queue already)."""
        waiting = self._waiting
        while waiting and waiting[0].done():  # its copy was cancelled meanwhile
            waiting.popleft()
        if not waiting:
            self._polling = False
            return
        self._passes += 1
        if len(ready) == 0 or self._passes > self.max_passes:
            self._passes = 0
            waiting.popleft().set_result(None)
            if not waiting:
                self._polling = False
                return
        loop.call_soon(self._poll, loop, ready)


_PER_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SpareTime] = (
    weakref.WeakKeyDictionary())


def spare_time() -> SpareTime:
    """The running loop's one queue of copies (every tenant's: two queues would each see
    the other's poll due and never find an idle pass)."""
    loop = asyncio.get_running_loop()
    spare = _PER_LOOP.get(loop)
    if spare is None:
        spare = _PER_LOOP[loop] = SpareTime()
    return spare
