"""The rollback's window: what the candidate did in the last `rollback.window` seconds, as
counts per slice of time (SLICES slices a window), not as an entry per call.

Why: an entry per call was a (time, verdict) tuple kept for the whole window, up to
100,000 of them (about 8 MB each for the calls and the comparisons of a tenant at full
speed: 3 MB measured for 20,000 of each), and two objects made for each of the
candidate's calls. Counts per slice make none per call and hold SLICES small lists
whatever the rate.

What it counts is the window's to within one slice: a slice whose start is in the window
counts whole, so up to 1/SLICES of the window's length of older calls may still count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

SLICES = 60  # a 60 s window counts per second


class Window:
    """Counts of events, and of each of their ``kinds``, in the last ``seconds``, on
    ``clock`` (monotonic seconds)."""

    __slots__ = ("_clock", "_column", "_kinds", "_slices", "seconds", "width")

    def __init__(self, seconds: float, kinds: tuple[str, ...],
                 clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.width = seconds / SLICES
        self._kinds = kinds
        self._column = {kind: 2 + i for i, kind in enumerate(kinds)}
        self._clock = clock
        # Each slice: [its number (start time ÷ width), events, then a count per kind].
        self._slices: deque[list[float]] = deque()

    def add(self, kind: str | None = None) -> bool:
        """One event, of ``kind`` (one of ``kinds``; None: counted as an event only);
        whether it started a new slice."""
        number = self._clock() // self.width
        slices = self._slices
        started = not slices or slices[-1][0] != number
        if started:
            slices.append([number, 0] + [0] * len(self._kinds))
            if len(slices) > SLICES + 1:  # older than the window whatever the time now
                slices.popleft()
        last = slices[-1]
        last[1] += 1
        if kind is not None:
            last[self._column[kind]] += 1
        return started

    def counts(self) -> tuple[int, dict[str, int]]:
        """The events in the window now, and how many of each kind."""
        oldest = (self._clock() - self.seconds) // self.width
        slices = self._slices
        while slices and slices[0][0] < oldest:
            slices.popleft()
        total = int(sum(s[1] for s in slices))
        return total, {kind: int(sum(s[2 + i] for s in slices))
                       for i, kind in enumerate(self._kinds)}

    def resized(self, seconds: float) -> Window:
        """This window's counts in a window of ``seconds`` (a reload that changed
        `rollback.window`): each slice's counts go to the slice of its start time."""
        if seconds == self.seconds:
            return self
        other = Window(seconds, self._kinds, self._clock)
        for number, *counts in self._slices:
            start = number * self.width // other.width
            if other._slices and other._slices[-1][0] == start:
                last = other._slices[-1]
                for i, n in enumerate(counts):
                    last[1 + i] += n
            else:
                other._slices.append([start, *counts])
        while len(other._slices) > SLICES + 1:
            other._slices.popleft()
        return other
