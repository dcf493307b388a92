"""The relay's memory backed by a store: two gateways (workers or replicas) sharing one
store take a notification once, agree on a seal's task, and on a spent seal."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.relay.state import RelayState
from gateway.state import Store


async def test_relay_state_shared_through_the_store(make_store: Callable[..., Store]) -> None:
    a, b = RelayState(store=make_store()), RelayState(store=make_store())
    firsts = await asyncio.gather(*(s.first_time("seal:digest", 60) for s in [a, b] * 10))
    assert firsts.count(True) == 1
    assert await a.bind("seal", "task-1")
    assert await b.bind("seal", "task-1")
    assert not await b.bind("seal", "task-2")
    assert not await a.spent("seal")
    await b.spend("seal", 0.2, 60)
    await a.spend("seal", 100, 60)  # the first end wins
    assert not await a.spent("seal")
    await asyncio.sleep(0.3)
    assert await a.spent("seal") and await b.spent("seal")


async def test_relay_state_without_a_store_is_per_process() -> None:
    a, b = RelayState(), RelayState()
    assert await a.first_time("k", 60) and await b.first_time("k", 60)
    assert not await a.first_time("k", 60)
