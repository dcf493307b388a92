"""The loss report: what one side could express and the other could not.

Translators never drop a field silently; they call :meth:`LossReport.drop` with a
dotted path, and the gateway decides (report, reject, carry) by its configured policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class LossPolicy(StrEnum):
    REPORT = "report"  # forward, tell the caller in A2A-Gateway-Dropped, log, count
    REJECT = "reject"  # refuse the request with InvalidParams naming the field
    CARRY = "carry"  # keep it in metadata under a private key where a carrier exists


# Private metadata key under which `carry` keeps what the other version cannot express.
CARRY_KEY = "a2a-gateway/carried"


# Which translation a loss was met in: the client's request being decoded, or one
# attempt at a backend interface (a fallback makes more than one).
DECODING = 0
FIRST_ATTEMPT = 1


@dataclass(slots=True)  # one or more per call
class LossReport:
    """Field paths dropped while translating one call, in the order they were met.

    Append-only: every drop is kept in ``log`` with the translation it was met in, and
    no one replaces a call's report. What it *says* (``request``, ``response``,
    ``dropped``) is the losses of the client's decoding and of the attempt that reached
    the backend: a fallback starts a new attempt (``next_attempt``), and a call passed
    through as the client sent it (``passed_through``) lost nothing in decoding."""

    policy: LossPolicy = LossPolicy.REPORT
    request: list[str] = field(default_factory=list)
    response: list[str] = field(default_factory=list)
    # Set while translating the answer, so that the same helpers record on the right side.
    answering: bool = False
    # Values of the answer only v0.3 can hold (e.g. the card's stateTransitionHistory),
    # by path: a v0.3 encoder puts them back (take); what no encoder took was lost.
    held: dict[str, Any] = field(default_factory=dict)
    # Every path lost so far, either side, once each, in the order met: what the caller
    # is told (A2A-Gateway-Dropped) and the log line lists.
    dropped: list[str] = field(default_factory=list)
    # Every drop as met: (attempt, side, path), side "request" or "response".
    log: list[tuple[int, str, str]] = field(default_factory=list)
    attempt: int = DECODING
    decoding_counts: bool = True

    def __post_init__(self) -> None:
        if not (self.request or self.response or self.held):
            return  # a new call's report (every call makes one): nothing to note yet
        for side, paths in (("request", self.request), ("response", self.response)):
            self.log.extend((self.attempt, side, p) for p in paths)
        for path in [*self.request, *self.response, *self.held]:
            if path not in self.dropped:
                self.dropped.append(path)

    def next_attempt(self) -> None:
        """A translation toward a backend interface starts: the one before it (another
        interface, which refused the call) no longer counts; the decoding still does."""
        self.attempt += 1
        if self.log or self.held:  # else nothing to recount (nearly every call)
            self._recount()

    def passed_through(self) -> None:
        """The backend gets the client's own bytes: what decoding them dropped is not lost."""
        self.decoding_counts = False
        if self.log or self.held:  # else nothing to recount (nearly every call)
            self._recount()

    def translated(self) -> None:
        """The backend gets the call translated after all (a pass-through's backend
        refused the connection; another one gets it): what decoding dropped counts
        again."""
        if not self.decoding_counts:
            self.decoding_counts = True
            self._recount()

    def _recount(self) -> None:
        counted = [(side, path) for attempt, side, path in self.log
                   if attempt == self.attempt or (attempt == DECODING and self.decoding_counts)]
        self.request = _unique(p for side, p in counted if side == "request")
        self.response = _unique(p for side, p in counted if side == "response")
        self.dropped = _unique([*(p for _, p in counted), *self.held])

    def drop(self, path: str) -> None:
        side = self.response if self.answering else self.request
        self.log.append((self.attempt, "response" if self.answering else "request", path))
        if path not in side:
            side.append(path)
        if path not in self.dropped:
            self.dropped.append(path)

    def hold(self, path: str, value: Any) -> None:
        self.held[path] = value
        if path not in self.dropped:
            self.dropped.append(path)

    def take(self, path: str) -> Any:
        """A held value for an encoder that can carry it (None when none is held)."""
        value = self.held.pop(path, None)
        if value is not None and path not in self.request and path not in self.response:
            self.dropped.remove(path)
        return value

    @property
    def carry(self) -> bool:
        return self.policy is LossPolicy.CARRY

    def answer_losses(self) -> list[str]:
        return self.response + [p for p in self.held if p not in self.response]

    def fields(self) -> list[str]:
        return list(self.dropped)

    def __bool__(self) -> bool:
        return bool(self.dropped)


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))
