"""Taking turns on the event loop while serving a stream.

A stream's events often arrive many to a read (a backend sends them faster than a
client takes them), and writing one to a client that keeps up does not suspend: the
loop serving them would run a whole read's events — tens of milliseconds — before
anything else on this worker runs, so a new call, or another stream's first event, waits
behind it. A serving loop asks :meth:`Turn.over` after each event and, when its turn has
lasted TURN seconds, lets the others run (`asyncio.sleep(0)`) before it goes on.

Measured (bench/README.md, "Streams take turns"): 16 streams of 200 events through one
core, a new stream's first event ~230 → ~35-40 ms after the backend's with 0.5 ms turns
(and each read's events decoded as they are served), events per second within the
noise; a turn per event halved them.
"""

from __future__ import annotations

import asyncio

TURN = 0.0005  # seconds a serving loop runs before the others get theirs


class Turn:
    __slots__ = ("_ends", "_loop")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._ends = self._loop.time() + TURN

    def over(self) -> bool:
        return self._loop.time() >= self._ends

    async def pass_on(self) -> None:
        """Let every other ready task run once, then start a new turn."""
        await asyncio.sleep(0)
        self._ends = self._loop.time() + TURN
