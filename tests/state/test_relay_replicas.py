"""Two gateway replicas on one real Redis: the one that took the agent's notifications
is SIGKILLed while their deliveries are queued (its receiver down); the other delivers
them all, in order, once the dead one's leases have run out (docs/push-relay.md,
"Delivery guarantees")."""

from __future__ import annotations

import uuid
from pathlib import Path

import aiohttp

from tests.support.relay_support import (
    Receiver,
    assert_once_each_in_order,
    gateway,
    notify,
    sealed_for,
)
from tests.support.waiting import wait_until


async def test_a_dead_replicas_deliveries_are_taken_over(tmp_path: Path,
                                                         redis_url: str) -> None:
    state = {"backend": "redis", "url": redis_url,
             "key_prefix": f"rr-{uuid.uuid4().hex[:8]}:"}
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/replicas", "t3")
    with gateway(tmp_path, "b", state, retries=30) as (b, _), \
            gateway(tmp_path, "a", state, retries=30) as (a, a_proc):
        async with aiohttp.ClientSession() as http:
            for n in range(20):  # to A: each answered 202 once queued in Redis
                await notify(http, a, sealed, "t3", n)
        # A holds (or held) the lane's head: it tried, and will try again.
        await wait_until(lambda: a.lines("push relay delivery will be retried"),
                         "A trying the first delivery")
        a_proc.kill()
        a_proc.wait()
        async with hooks.up():
            await wait_until(lambda: len(hooks.on("/replicas")) >= 20, "20 deliveries",
                             timeout=30)
    assert_once_each_in_order(hooks.on("/replicas"), 20)
    assert b.lines("push relay delivered")
