"""The rollback's window counts per slice of time, on an injected clock."""

from __future__ import annotations

import tracemalloc

from gateway.config.migration import RollbackConfig
from gateway.migration.stats import TenantStats
from gateway.migration.window import SLICES, Window
from tests.support.helpers import ManualClock


def test_the_window_counts_what_its_last_seconds_hold_by_kind() -> None:
    clock = ManualClock()
    window = Window(60, ("error", "timeout"), clock)
    for kind in (None, "error", "error", "timeout"):
        window.add(kind)
    clock.now += 30
    window.add(None)
    assert window.counts() == (5, {"error": 2, "timeout": 1})
    clock.now += 31  # the first four are 61 s old now
    assert window.counts() == (1, {"error": 0, "timeout": 0})
    clock.now += 60
    assert window.counts() == (0, {"error": 0, "timeout": 0})


def test_the_window_holds_a_bounded_number_of_slices_whatever_the_time() -> None:
    clock = ManualClock()
    window = Window(6, (), clock)
    for _ in range(10 * SLICES):
        window.add()
        clock.now += 6 / SLICES
    assert len(window._slices) <= SLICES + 1
    assert window.counts()[0] <= SLICES + 1


def test_a_canary_at_full_speed_keeps_no_memory_per_call_for_its_window() -> None:
    # Each call of the candidate used to keep a (time, verdict) tuple for the whole
    # window (up to 100,000: ~9 MB a tenant at full speed).
    clock = ManualClock()
    stats = TenantStats(RollbackConfig.model_validate({"window": 60, "min_calls": 5}),
                        keep=3, clock=clock)
    stats.call("candidate", 0.001, "ok")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            stats.call("candidate", 0.001, "error" if i % 10 == 0 else "ok")
            stats.compared([], None)
            clock.now += 0.001  # 20 s of calls: within the window
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 200_000, kept  # the 1,000 latencies kept and the slices; an entry per call: 3 MB
    assert stats.window_view() == {"candidate_calls": 20_001, "comparisons": 20_000}
    assert stats.breach() is None  # 10 % errors, under the default 20 %


def test_a_reload_that_changes_the_window_keeps_its_counts() -> None:
    clock = ManualClock()
    rules = RollbackConfig.model_validate({"window": 60, "min_calls": 5})
    old = TenantStats(rules, keep=3, clock=clock)
    for _ in range(4):
        old.call("candidate", 0.01, "error")
    clock.now += 20
    old.call("candidate", 0.01, "ok")
    wider = TenantStats(RollbackConfig.model_validate({"window": 120, "min_calls": 5}),
                        keep=3, clock=clock)
    wider.carry(old)
    assert wider.window_view()["candidate_calls"] == 5
    reason = wider.breach()
    assert reason is not None and reason.startswith("candidate error rate 0.80")
    narrower = TenantStats(RollbackConfig.model_validate({"window": 10, "min_calls": 1}),
                           keep=3, clock=clock)
    narrower.carry(old)
    assert narrower.window_view()["candidate_calls"] == 1  # the errors are 20 s old
