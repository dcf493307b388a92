"""The loss report: what one side could express and the other could not.

Translators never drop a field silently; they call :meth:`LossReport.drop` with a
dotted path, and the gateway decides (report, reject, carry) by its configured policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class LossPolicy(StrEnum):
    REPORT = "report"  # forward, tell the caller in A2A-Gateway-Dropped, log, count
    REJECT = "reject"  # refuse the request with InvalidParams naming the field
    CARRY = "carry"  # keep it in metadata under a private key where a carrier exists


# Private metadata key under which `carry` keeps what the other version cannot express.
CARRY_KEY = "a2a-gateway/carried"


@dataclass
class LossReport:
    """Field paths dropped while translating one call, in the order they were met."""

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

    def __post_init__(self) -> None:
        for path in [*self.request, *self.response, *self.held]:
            if path not in self.dropped:
                self.dropped.append(path)

    def fork(self) -> LossReport:
        """A copy to go on from: a fallback translates the canonical request again for
        another interface, and what the client's own request lost on the way to it (its
        decoding) must stay in the report, while one interface's losses are that
        attempt's alone."""
        return LossReport(self.policy, list(self.request), list(self.response),
                          self.answering, dict(self.held), list(self.dropped))

    def drop(self, path: str) -> None:
        side = self.response if self.answering else self.request
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
