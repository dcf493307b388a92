"""The per-stream deadline (gateway/streams/deadline.py): what is awaited while armed ends in
TimeoutError at the deadline; re-arming moves it; nothing expires while disarmed."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.streams.deadline import Deadline


async def test_an_armed_wait_past_the_deadline_ends_in_timeout_error() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with Deadline() as deadline:
            deadline.arm(0.05)
            await asyncio.sleep(5)
    assert 0.04 < time.monotonic() - started < 1.0
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_rearming_for_each_item_bounds_each_wait_not_the_sum() -> None:
    async with Deadline() as deadline:
        for _ in range(6):  # 6 x 0.03 s in all, more than one bound of 0.08 s
            deadline.arm(0.08)
            await asyncio.sleep(0.03)
            deadline.disarm()
        deadline.disarm()
        await asyncio.sleep(0.15)  # disarmed: not bounded
    with pytest.raises(TimeoutError):
        async with Deadline() as deadline:
            deadline.arm(0.5)
            deadline.arm(0.02)  # a nearer deadline replaces a farther one
            await asyncio.sleep(0.3)


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    async def armed() -> None:
        async with Deadline() as deadline:
            deadline.arm(5)
            await asyncio.sleep(5)

    task = asyncio.ensure_future(armed())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
