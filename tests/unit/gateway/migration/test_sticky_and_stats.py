"""The canary's stable hash, and the rollback's window on an injected clock (also as a
call's ticket counts into it)."""

from __future__ import annotations

import asyncio

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.config.migration import RollbackConfig
from gateway.migration.shadow import verdict_of
from gateway.migration.stats import TenantStats, Verdict, above_noise
from gateway.migration.sticky import arm_for, point
from gateway.state import store_unavailable
from tests.support.helpers import ManualClock
from tests.support.migration_calls import call, chosen, migration, ticket
from translators import operations as ops
from translators.answer_diff import Difference
from translators.errors import A2AError, a2a_error


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


def test_failures_before_min_calls_are_checked_again_within_a_slice() -> None:
    # A check sums the window, so a call asks for one only when it failed or starts a
    # slice: failures counted before `min_calls` are looked at again a slice later.
    clock = ManualClock()
    stats = _stats(clock, max_error_rate=0.3)  # window 10 s: slices of 1/6 s
    assert [stats.call("candidate", 0.01, "error") for _ in range(2)] == [True, True]
    assert stats.breach() is None  # 2 calls: too few to judge
    assert [stats.call("candidate", 0.01, "ok") for _ in range(3)] == [False] * 3
    assert stats.breach() is not None  # 2 of 5 failed: what the next check finds
    clock.now += 10 / 60
    assert stats.call("candidate", 0.01, "ok") is True
    assert stats.call("primary", 0.01, "error") is False  # not the canary's


async def test_a_canary_whose_failures_came_before_min_calls_is_rolled_back_later() -> None:
    m = migration(share=1.0)
    clock = ManualClock()
    m.stats = TenantStats(RollbackConfig.model_validate(
        {"window": 60, "min_calls": 4, "max_error_rate": 0.3}), keep=3, clock=clock)

    async def counted(verdict: Verdict) -> None:
        c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(message_id="m")))
        ticket(await chosen(m, c)).count(verdict)

    verdicts: tuple[Verdict, ...] = ("error", "error", "ok", "ok")
    for verdict in verdicts:
        await counted(verdict)
    assert m.control.share == 1.0  # the failures came before the window held 4 calls
    clock.now += 1  # the window's next slice: its first call asks for a check
    await counted("ok")
    assert m._rolling is not None
    await m._rolling
    assert m.control.share == 0.0 and m.control.rolled_back_by() == "automatic"


async def test_a_promotion_after_a_rollback_is_not_undone_by_the_calls_before_it() -> None:
    # The failures that rolled the canary back were still in the window when the
    # operator promoted the mended candidate: its next call rolled it back again.
    m = migration(share=1.0)
    m.stats = TenantStats(RollbackConfig.model_validate(
        {"window": 60, "min_calls": 4, "max_error_rate": 0.3}), keep=3, clock=ManualClock())

    async def counted(verdict: Verdict) -> None:
        c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(message_id="m")))
        ticket(await chosen(m, c)).count(verdict)

    for verdict in ("error",) * 4:
        await counted(verdict)
    assert m._rolling is not None
    await m._rolling
    assert m.control.share == 0.0 and m.control.rolled_back_by() == "automatic"
    await m.move("promote", "admin API", "mended")
    await counted("error")  # one failure after the promotion: 1 of 1, below min_calls
    assert m._rolling.done() and m.control.share == 1.0
    for verdict in ("error",) * 3:  # the mended candidate fails again: rolled back
        await counted(verdict)
    await m._rolling
    assert m.control.share == 0.0
    assert [e["kind"] for e in m.control.events] == ["rollback", "promote", "rollback"]


async def test_the_gateways_own_store_failure_is_not_counted_against_the_candidate() -> None:
    assert verdict_of(store_unavailable("the task index cannot be written now")) == "ok"
    assert verdict_of(a2a_error("BackendUnavailableError", "refused")) == "error"
    assert verdict_of(a2a_error("InternalError", "the agent failed")) == "error"
    m = migration(share=1.0)
    c = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(message_id="m")))
    held = ticket(await chosen(m, c))
    # A stream's hold, left by the store's failure (its journal, the index's write).
    with pytest.raises(A2AError):
        async with held:
            raise store_unavailable("the task index cannot be written now")
    assert (m.stats.arms["candidate"].calls, m.stats.arms["candidate"].errors) == (1, 0)
    assert m._rolling is None


async def test_a_stream_cut_off_by_cancelling_is_counted_not_against_the_agent() -> None:
    # The journal's hold ran out on a stream read on after its client left: cancelled.
    m = migration(share=1.0)
    c = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(message_id="m")))
    held = ticket(await chosen(m, c, streaming=True))
    with pytest.raises(asyncio.CancelledError):
        async with held:
            raise asyncio.CancelledError
    assert (m.stats.arms["candidate"].calls, m.stats.arms["candidate"].errors) == (1, 0)


def test_a_reload_with_a_smaller_keep_keeps_the_newest_disagreements() -> None:
    before = TenantStats(RollbackConfig(), keep=50)
    for n in range(50):
        before.disagreements.appendleft({"n": n})  # newest first, as the copies add them
    after = TenantStats(RollbackConfig(), keep=5)
    after.carry(before)
    assert [d["n"] for d in after.disagreements] == [49, 48, 47, 46, 45]
    larger = TenantStats(RollbackConfig(), keep=100)
    larger.carry(before)
    assert [d["n"] for d in larger.disagreements] == list(range(49, -1, -1))
