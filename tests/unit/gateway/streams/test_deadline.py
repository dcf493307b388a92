"""The per-stream deadline (gateway/streams/deadline.py): what is awaited while armed ends in
TimeoutError at the deadline; re-arming moves it; nothing expires while disarmed. The
deadline is timed by the event loop: these run on a loop with a clock of its own
(tests/support/fake_time.py), so each asserts the exact time, not a bound."""

from __future__ import annotations

import asyncio

import pytest

from gateway.streams.deadline import Deadline
from tests.support.fake_time import run_in_fake_time


def test_an_armed_wait_past_the_deadline_ends_in_timeout_error() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError):
            async with Deadline() as deadline:
                deadline.arm(0.05)
                await asyncio.sleep(5)
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
        return loop.time() - started

    assert run_in_fake_time(main()) == pytest.approx(0.05)


def test_rearming_for_each_item_bounds_each_wait_not_the_sum() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with Deadline() as deadline:
            for _ in range(6):  # 6 x 0.03 s in all, more than one bound of 0.08 s
                deadline.arm(0.08)
                await asyncio.sleep(0.03)
                deadline.disarm()
            deadline.disarm()
            await asyncio.sleep(0.15)  # disarmed: not bounded
        unbounded = loop.time() - started
        started = loop.time()
        with pytest.raises(TimeoutError):
            async with Deadline() as deadline:
                deadline.arm(0.5)
                deadline.arm(0.02)  # a nearer deadline replaces a farther one
                await asyncio.sleep(0.3)
        return unbounded, loop.time() - started

    unbounded, bounded = run_in_fake_time(main())
    assert unbounded == pytest.approx(6 * 0.03 + 0.15)  # every sleep ran to its end
    assert bounded == pytest.approx(0.02)


def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    async def main() -> None:
        async def armed() -> None:
            async with Deadline() as deadline:
                deadline.arm(5)
                await asyncio.sleep(5)

        task = asyncio.ensure_future(armed())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_in_fake_time(main())
