"""Taking turns on the event loop while serving a stream, and letting new calls go first.

A stream's events often arrive many to a read (a backend sends them faster than a
client takes them), and writing one to a client that keeps up does not suspend: the
loop serving them would run a whole read's events — tens of milliseconds — before
anything else on this worker runs, so a new call, or another stream's first event, waits
behind it. A serving loop asks :meth:`Turn.over` after each event and, when its turn has
lasted TURN seconds, lets the others run before it goes on.

Fair turns are not enough for a call that is starting: each of its steps (reading the
request, the backend's answer, the first write) waited for the event loop to poll its
sockets, which it did only after a round of every open stream's turn, 16 streams x
0.5 ms = 8 ms a step. So the open streams take their turns one per pass of the loop
(:class:`Rotation`): what is ready on a socket waits one turn, not a round. And while a
call is *opening* (from its request's first byte to its answer's first byte, for at most
PRIORITY seconds) those turns are one event long (SHORT_TURN).

Measured (bench/README.md, "Streams take turns"): 16 streams of 200 events through one
core, a new stream's first event ~230 → ~35-40 ms after the backend's with 0.5 ms turns
(and each read's events decoded as they are served); a turn per event halved the events
per second. Openings first: ~15 ms. One turn per pass: ~3.75 ms. One event per turn
while a call starts: ~3.1 ms (the same section).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

TURN = 0.0005  # seconds a serving loop runs before the others get theirs
# While a call is starting, one event per turn: the starting call's next step waits one
# event of one stream, not a fraction of a millisecond of several (bench/README.md).
SHORT_TURN = 0.0
PRIORITY = 0.010  # seconds a call counts as starting, at most


class Rotation:
    """The serving loops whose turn is over, released one per pass of the event loop.

    With ``sleep(0)`` after each turn, one pass of the loop ran every open stream's next
    turn before the loop polled its sockets again. Released one at a time, the streams
    keep their order, and the loop polls between two turns. Two per pass halved the polls
    but doubled what a starting call waits at each step; the events per second were
    within the noise (bench/README.md).
    """

    __slots__ = ("_loop", "_passing", "_waiting")

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._passing = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def wait(self) -> asyncio.Future[None]:
        """Answered on a later pass of the loop, after the loops that waited before."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a release scheduled on a loop that has stopped is lost
            self._loop, self._passing = loop, False
            self._waiting.clear()
        turn = loop.create_future()
        self._waiting.append(turn)
        if not self._passing:
            self._passing = True
            loop.call_soon(self._release_next, loop)
        return turn

    def _release_next(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting = self._waiting
        while waiting:
            turn = waiting.popleft()
            if not turn.done():  # a cancelled stream has left the queue
                turn.set_result(None)
                break
        if waiting:
            # The released loop runs on the next pass; the one after it, on the pass after.
            loop.call_soon(self._release_next, loop)
        else:
            self._passing = False


class Opening:
    """One starting call, until it is answered or its priority runs out."""

    __slots__ = ("expires", "live")

    def __init__(self, expires: float) -> None:
        self.expires = expires
        self.live = True


class Openings:
    """The calls starting now on one worker, and the open streams' rotation: while a call
    starts, the streams' turns are short."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.pending = 0  # live openings; may count ones past PRIORITY until next looked at
        self._queue: deque[Opening] = deque()  # by start, the answered ones too
        self.rotation = Rotation()  # the open streams' turns on this worker
        # What the streams' turns are timed by; None: the running loop's clock. A test
        # sets its own to count the events a turn serves instead of timing them (the
        # openings' PRIORITY stays on the loop's clock, as the ingress stamps them).
        self.clock = clock

    def begin(self, now: float | None = None) -> Opening:
        """A call starts (``now``: the loop's time, if the caller has it at hand)."""
        if now is None:
            now = asyncio.get_running_loop().time()
        self.expire(now)
        opening = Opening(now + PRIORITY)
        self._queue.append(opening)
        self.pending += 1
        return opening

    def end(self, opening: Opening) -> None:
        """The call answered (or went away); a second end is a no-op."""
        if opening.live:
            opening.live = False
            self.pending -= 1

    def expire(self, now: float) -> None:
        """Drop the answered openings and those past PRIORITY (a call waiting on a slow
        backend stops counting)."""
        queue = self._queue
        while queue and (not queue[0].live or queue[0].expires <= now):
            self.end(queue.popleft())


class Turn:
    __slots__ = ("_began", "_clock", "_loop", "_openings")

    def __init__(self, openings: Openings | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        if clock is None:
            clock = (openings.clock if openings is not None else None) or self._loop.time
        self._clock = clock
        self._began = clock()
        self._openings = openings

    def short(self) -> bool:
        """Whether the turns are short now: a call is starting on this worker."""
        openings = self._openings
        return openings is not None and openings.pending > 0

    def over(self) -> bool:
        openings = self._openings
        length = SHORT_TURN if openings is not None and openings.pending else TURN
        return self._clock() >= self._began + length

    async def pass_on(self) -> None:
        """Let the others run (the open streams one per pass of the loop), then start a
        new turn."""
        openings = self._openings
        if openings is None:
            await asyncio.sleep(0)
        else:
            if openings.pending:
                openings.expire(self._loop.time())
            await openings.rotation.wait()
        self._began = self._clock()
