"""Taking turns on the event loop while serving a stream, and letting new calls go first.

A stream's events often arrive many to a read (a backend sends them faster than a
client takes them), and writing one to a client that keeps up does not suspend: the
loop serving them would run a whole read's events — tens of milliseconds — before
anything else on this worker runs, so a new call, or another stream's first event, waits
behind it. A serving loop asks :meth:`Turn.over` after each event and, when its turn has
lasted TURN seconds, lets the others run before it goes on.

Fair turns are not enough for a call that is starting: each of its steps (reading the
request, the backend's answer, the first write) waits a whole round of the other
streams' turns, 16 streams x 0.5 ms = 8 ms a step. So while a call is *opening* (from
its request's first byte to its answer's first byte, for at most PRIORITY seconds) the
serving loops take SHORT_TURN turns and, at most every other HOLD seconds, wait up to
HOLD for the openings to be answered: the open streams keep at least half of the loop,
and a call that waits on a slow backend stops counting after PRIORITY.

Measured (bench/README.md, "Streams take turns"): 16 streams of 200 events through one
core, a new stream's first event ~230 → ~35-40 ms after the backend's with 0.5 ms turns
(and each read's events decoded as they are served); a turn per event halved the events
per second. Openings first: see the same section.
"""

from __future__ import annotations

import asyncio
from collections import deque

TURN = 0.0005  # seconds a serving loop runs before the others get theirs
SHORT_TURN = 0.0001  # the same while a call is starting
PRIORITY = 0.010  # seconds a starting call goes before the open streams, at most
HOLD = 0.002  # seconds the open streams may wait for starting calls, at most every other HOLD


class Opening:
    """One starting call, until it is answered or its priority runs out."""

    __slots__ = ("expires", "live")

    def __init__(self, expires: float) -> None:
        self.expires = expires
        self.live = True


class Openings:
    """The calls starting now on one worker: the open streams let them go first."""

    def __init__(self) -> None:
        self.pending = 0  # live openings; may count ones past PRIORITY until next looked at
        self._queue: deque[Opening] = deque()  # by start, the answered ones too
        self._gate: asyncio.Future[None] | None = None
        self._gate_timer: asyncio.TimerHandle | None = None
        self._next_hold = 0.0

    def begin(self) -> Opening:
        now = asyncio.get_running_loop().time()
        self._expire(now)
        opening = Opening(now + PRIORITY)
        self._queue.append(opening)
        self.pending += 1
        return opening

    def end(self, opening: Opening) -> None:
        """The call answered (or went away); a second end is a no-op."""
        if opening.live:
            opening.live = False
            self.pending -= 1
            if not self.pending:
                self._release()

    def hold(self) -> asyncio.Future[None] | None:
        """What an open stream waits on before its next turn (None: nothing): answered
        when no call is opening any more, or after HOLD."""
        if not self.pending:
            return None
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._expire(now)
        if not self.pending:
            return None
        if self._gate is None:
            if now < self._next_hold:
                return None  # the streams' half of the time
            self._gate = loop.create_future()
            self._gate_timer = loop.call_at(now + HOLD, self._release)
            self._next_hold = now + 2 * HOLD
        return self._gate

    def _expire(self, now: float) -> None:
        queue = self._queue
        while queue and (not queue[0].live or queue[0].expires <= now):
            self.end(queue.popleft())

    def _release(self) -> None:
        gate, self._gate = self._gate, None
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        if gate is not None and not gate.done():
            gate.set_result(None)


class Turn:
    __slots__ = ("_began", "_loop", "_openings")

    def __init__(self, openings: Openings | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._began = self._loop.time()
        self._openings = openings

    def over(self) -> bool:
        openings = self._openings
        length = SHORT_TURN if openings is not None and openings.pending else TURN
        return self._loop.time() >= self._began + length

    async def pass_on(self) -> None:
        """Let every other ready task run once (and the starting calls first, for up to
        HOLD), then start a new turn."""
        gate = self._openings.hold() if self._openings is not None else None
        if gate is None:
            await asyncio.sleep(0)
        else:
            await asyncio.shield(gate)  # a cancelled stream must not cancel the others' wait
        self._began = self._loop.time()
