"""What one process has seen of a tenant's migration: calls per arm, the candidate's
recent outcomes (the rollback's window), shadow comparisons and their differences above
the A/A noise, and the last disagreements. Bounded: a window of `rollback.window`
seconds counted per slice of it (window.py), LATENCIES latencies per arm, `keep`
disagreements. Time is an injected clock (monotonic seconds)."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal

from gateway.config.migration import RollbackConfig
from gateway.migration.sticky import ARMS, CANDIDATE, Arm
from gateway.migration.window import Window
from translators.answer_diff import Difference

Verdict = Literal["ok", "error", "timeout"]
LATENCIES = 1000  # the latest call times kept per arm (the percentiles' sample)
_FAILED: tuple[Verdict, ...] = ("error", "timeout")  # what the window counts by kind


@dataclass(slots=True)
class ArmCounts:
    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    fell_back: int = 0  # new conversations the candidate refused, sent to the primary
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES))

    def view(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pct(p: float) -> float | None:
            if not ordered:
                return None
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3)

        return {"calls": self.calls, "errors": self.errors, "timeouts": self.timeouts,
                "fell_back": self.fell_back, "p50_ms": pct(0.5), "p95_ms": pct(0.95)}


@dataclass(slots=True)
class ShadowCounts:
    compared: int = 0
    agreed: int = 0
    skipped: int = 0  # copies not made: max_concurrent reached
    failed: int = 0  # copies that could not be compared (the primary's stream broke)
    aa_compared: int = 0
    diffs: Counter[str] = field(default_factory=Counter)  # comparisons with the kind
    noise: Counter[str] = field(default_factory=Counter)  # A/A comparisons with the kind

    def noise_rate(self, kind: str) -> float:
        return self.noise[kind] / self.aa_compared if self.aa_compared else 0.0

    def view(self) -> dict[str, Any]:
        above = {k: n for k, n in sorted(self.diffs.items())
                 if not self.aa_compared or n / max(self.compared, 1) > self.noise_rate(k)}
        return {"compared": self.compared, "agreed": self.agreed,
                "agreement_rate": (round(self.agreed / self.compared, 4)
                                   if self.compared else None),
                "skipped": self.skipped, "failed": self.failed,
                "diffs_by_kind": above,
                "noise_by_kind": ({k: round(self.noise_rate(k), 4) for k in sorted(self.noise)}
                                  if self.aa_compared else {})}


def above_noise(found: Sequence[Difference], noise: Sequence[Difference] | None,
                ) -> list[Difference]:
    """The candidate's differences that the primary did not show against itself on the
    same call (its A/A copy): what differs there is the agent's own variation."""
    if not noise:
        return list(found)
    seen = {(d.kind, d.path) for d in noise}
    return [d for d in found if (d.kind, d.path) not in seen]


class TenantStats:
    def __init__(self, rules: RollbackConfig, keep: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rules = rules
        self.clock = clock
        self.arms = {arm: ArmCounts() for arm in ARMS}
        self.shadow = ShadowCounts()
        self.disagreements: deque[dict[str, Any]] = deque(maxlen=keep)
        # The candidate's recent calls (by verdict) and comparisons (the disagreements).
        self._calls = Window(rules.window, _FAILED, clock)
        self._compared = Window(rules.window, ("differed",), clock)
        self._share: float | None = None  # the canary's, as this process last used it

    def share_set(self, share: float) -> None:
        """The canary's share as this process uses it now. Where it rises from 0 (a
        promotion, here or read from another process; a config with a share of its own
        after a rollback), the rollback's windows start empty: the calls that rolled the
        canary back do not roll it back again at its next call."""
        if share > 0 and self._share == 0:
            self.restart()
        self._share = share

    def restart(self) -> None:
        """The rollback's windows, empty: a promotion (seen here or read from another
        process) or a share risen from 0 starts the rollback's judgement afresh."""
        self._calls = Window(self.rules.window, _FAILED, self.clock)
        self._compared = Window(self.rules.window, ("differed",), self.clock)

    def carry(self, previous: TenantStats) -> None:
        """Keep what the config this one replaced had counted (a reload)."""
        self._share = previous._share
        self.arms, self.shadow = previous.arms, previous.shadow
        # Newest first: with a smaller `keep`, the newest are the ones kept.
        self.disagreements.extend(islice(previous.disagreements, self.disagreements.maxlen))
        self._calls = previous._calls.resized(self.rules.window)
        self._compared = previous._compared.resized(self.rules.window)

    def call(self, arm: Arm, seconds: float, verdict: Verdict) -> bool:
        """Count one call; whether the rollback is to be checked now: the candidate's
        call failed, or it is the first in a slice of the window. Failures counted before
        the window held `min_calls` are so looked at again once it does, a slice later at
        most, without summing the window on every call."""
        counts = self.arms[arm]
        counts.calls += 1
        counts.latencies.append(seconds)
        if verdict == "error":
            counts.errors += 1
        elif verdict == "timeout":
            counts.timeouts += 1
        if arm != CANDIDATE:
            return False
        ok = verdict == "ok"
        return self._calls.add(None if ok else verdict) or not ok

    def compared(self, differences: Sequence[Difference],
                 noise: Sequence[Difference] | None) -> bool:
        """One shadow comparison (``noise``: the A/A copy's differences, if one was made);
        whether the answers agreed."""
        shadow = self.shadow
        shadow.compared += 1
        if noise is not None:
            shadow.aa_compared += 1
            shadow.noise.update({d.kind for d in noise})
        shadow.diffs.update({d.kind for d in differences})
        agreed = not differences
        shadow.agreed += agreed
        self._compared.add(None if agreed else "differed")
        return agreed

    def breach(self) -> str | None:
        """Why the canary should be rolled back now (a rate over its threshold in the
        window, with at least `min_calls` counted), or None."""
        rules = self.rules
        if not rules.enabled:
            return None
        calls, counted = self._calls.counts()
        if calls >= rules.min_calls:
            limits: tuple[tuple[Verdict, float], ...] = (
                ("error", rules.max_error_rate), ("timeout", rules.max_timeout_rate))
            for verdict, limit in limits:
                rate = counted[verdict] / calls
                if rate > limit:
                    return (f"candidate {verdict} rate {rate:.2f} over the last "
                            f"{rules.window:g} s ({calls} calls) > {limit:g}")
        compared, differed = self._compared.counts()
        if compared >= rules.min_calls and rules.max_diff_rate < 1:
            rate = differed["differed"] / compared
            if rate > rules.max_diff_rate:
                return (f"shadow diff rate {rate:.2f} over the last {rules.window:g} s "
                        f"({compared} comparisons) > {rules.max_diff_rate:g}")
        return None

    def window_view(self) -> dict[str, Any]:
        return {"candidate_calls": self._calls.counts()[0],
                "comparisons": self._compared.counts()[0]}
