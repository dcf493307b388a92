"""The canary's stable hash, and the rollback's window on an injected clock."""

from __future__ import annotations

from gateway.config.migration import RollbackConfig
from gateway.migration.stats import TenantStats, above_noise
from gateway.migration.sticky import arm_for, point
from tests.support.helpers import ManualClock
from translators.answer_diff import Difference


def test_the_hash_is_stable_and_spreads_evenly() -> None:
    assert point("shop", "ctx-1") == point("shop", "ctx-1")
    assert point("shop", "ctx-1") != point("other", "ctx-1")
    # The same points in every version of the gateway: an upgrade moves no conversation
    # (BLAKE2b, 8 bytes, of tenant NUL key, read big-endian over 2**64).
    assert (point("shop", "ctx-1"), point("shop", "principal:alice"),
            point("other", "ctx-1")) == (0.9087279709347655, 0.373887550792367,
                                        0.6727016019848863)
    arms = [arm_for("shop", f"ctx-{i}", 0.3) for i in range(10_000)]
    assert 0.28 < arms.count("candidate") / len(arms) < 0.32


def test_raising_the_share_only_moves_conversations_to_the_candidate() -> None:
    keys = [f"ctx-{i}" for i in range(2000)]
    before = {k for k in keys if arm_for("shop", k, 0.2) == "candidate"}
    after = {k for k in keys if arm_for("shop", k, 0.4) == "candidate"}
    assert before < after


def _stats(clock: ManualClock, **rules: float) -> TenantStats:
    return TenantStats(RollbackConfig.model_validate({"window": 10, "min_calls": 5, **rules}),
                       keep=3, clock=clock)


def test_no_rollback_before_the_window_holds_min_calls() -> None:
    clock = ManualClock()
    stats = _stats(clock, max_error_rate=0.2)
    for _ in range(4):
        stats.call("candidate", 0.01, "error")
    assert stats.breach() is None
    stats.call("candidate", 0.01, "error")
    reason = stats.breach()
    assert reason is not None and "candidate error rate 1.00" in reason


def test_calls_older_than_the_window_no_longer_count() -> None:
    clock = ManualClock()
    stats = _stats(clock, max_timeout_rate=0.5)
    for _ in range(5):
        stats.call("candidate", 0.01, "timeout")
    clock.now += 11
    for _ in range(5):
        stats.call("candidate", 0.01, "ok")
    assert stats.breach() is None
    assert stats.arms["candidate"].timeouts == 5  # the totals stay
    for _ in range(5):
        stats.call("primary", 0.01, "error")  # the primary's errors are not the canary's
    assert stats.breach() is None


def test_the_diff_rate_rolls_back_only_when_asked() -> None:
    clock = ManualClock()
    found = [Difference("text", "artifacts[0].parts[0].text", "a", "b")]
    stats = _stats(clock)
    for _ in range(6):
        stats.compared(found, None)
    assert stats.breach() is None  # max_diff_rate 1: never
    stats = _stats(clock, max_diff_rate=0.5)
    for _ in range(6):
        stats.compared(found, None)
    reason = stats.breach()
    assert reason is not None and "shadow diff rate 1.00" in reason


def test_what_the_primary_differs_in_from_itself_is_noise() -> None:
    text = Difference("text", "artifacts[0].parts[0].text", "a", "b")
    data = Difference("data", "artifacts[0].parts[1].data.total", "1", "2")
    assert above_noise([text, data], [text]) == [data]
    assert above_noise([text], None) == [text]
    stats = _stats(ManualClock())
    stats.compared([data], [text])
    view = stats.shadow.view()
    assert view["diffs_by_kind"] == {"data": 1}
    assert view["noise_by_kind"] == {"text": 1.0}
    assert view["agreement_rate"] == 0.0
