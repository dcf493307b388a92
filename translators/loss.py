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

    def drop(self, path: str) -> None:
        side = self.response if self.answering else self.request
        if path not in side:
            side.append(path)

    def hold(self, path: str, value: Any) -> None:
        self.held[path] = value

    def take(self, path: str) -> Any:
        """A held value for an encoder that can carry it (None when none is held)."""
        return self.held.pop(path, None)

    @property
    def carry(self) -> bool:
        return self.policy is LossPolicy.CARRY

    def answer_losses(self) -> list[str]:
        return self.response + [p for p in self.held if p not in self.response]

    def fields(self) -> list[str]:
        return self.request + [p for p in self.answer_losses() if p not in self.request]

    def __bool__(self) -> bool:
        return bool(self.request or self.response or self.held)
