"""Spare time on the event loop (gateway/migration/spare.py): a waiter goes on at a pass of
the loop with nothing else due, one per pass, in order; a loop never idle still gives a
turn after max_passes; a loop without asyncio's ready queue gives it at once."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest

from gateway.migration.spare import SpareTime, _ready_queue, spare_time


def busy(passes: int, done: list[str]) -> None:
    """Work due on each of ``passes`` passes of the loop (a callback that schedules itself
    again), each pass noted in ``done``."""
    loop = asyncio.get_running_loop()

    def step(left: int) -> None:
        done.append("busy")
        if left > 1:
            loop.call_soon(step, left - 1)

    loop.call_soon(step, passes)


async def test_asyncio_private_ready_queue_is_read_here() -> None:
    # The one use of asyncio's private `_ready`: if a Python release renames it, copies
    # would go on at once again (no harm but the clients' latency); this says so first.
    queue = _ready_queue(asyncio.get_running_loop())
    assert isinstance(queue, deque)


async def test_a_waiter_goes_on_only_once_the_work_due_is_done() -> None:
    order: list[str] = []
    spare = SpareTime(max_passes=100)
    busy(40, order)

    async def copy() -> None:
        await spare.wait()
        order.append("copy")

    await asyncio.create_task(copy())
    assert order == ["busy"] * 40 + ["copy"]


async def test_a_loop_never_idle_gives_a_turn_after_max_passes() -> None:
    order: list[str] = []
    spare = SpareTime(max_passes=5)
    busy(100, order)
    waiting = asyncio.create_task(spare.wait())
    while not waiting.done():
        await asyncio.sleep(0)
    assert 4 <= len(order) <= 8  # a handful of busy passes, not the 100


async def test_waiters_go_in_order_one_per_pass() -> None:
    order: list[str] = []
    spare = SpareTime()

    async def copy(name: str) -> None:
        await spare.wait()
        order.append(name)
        busy(3, order)  # its own work, due on the next passes: the next copy waits for it

    await asyncio.gather(*(copy(name) for name in ("a", "b", "c")))
    while len(order) < 12:
        await asyncio.sleep(0)
    assert order == ["a", *["busy"] * 3, "b", *["busy"] * 3, "c", *["busy"] * 3]


async def test_a_cancelled_waiter_gives_its_turn_to_the_next() -> None:
    spare = SpareTime()
    order: list[str] = []
    busy(10, order)
    first = asyncio.create_task(spare.wait())
    second = asyncio.create_task(spare.wait())
    await asyncio.sleep(0)
    first.cancel()
    await second
    assert first.cancelled()
    assert order == ["busy"] * 10


async def test_each_loop_has_one_queue_for_every_tenant() -> None:
    assert spare_time() is spare_time()


def test_a_loop_without_a_ready_queue_gives_the_turn_at_once() -> None:
    uvloop = pytest.importorskip("uvloop")
    order: list[str] = []

    async def main() -> None:
        busy(10, order)
        await SpareTime().wait()
        order.append("copy")

    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert order.index("copy") < 10
