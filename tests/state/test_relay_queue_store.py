"""The relay queue's contract (gateway/state/relay_queue.py) on both stores: order
per lane, leases, duplicates, coalesced snapshots, the per-tenant bound, dead letters."""

from __future__ import annotations

import pytest

from gateway.state import Store
from gateway.state.relay_queue import NewDelivery, RelayQueueLimits, RelayQueueStore

LIMITS = RelayQueueLimits(max_per_tenant=5, dedupe_ttl=60)


def item(wid: str, lane: str = "L1", tenant: str = "t", body: bytes | None = b"{}",
         ) -> NewDelivery:
    return NewDelivery(tenant=tenant, lane=lane, webhook_id=wid, sealed="s", task_id="task",
                       body=body, event=b"e", dropped="[]", trace="{}")


@pytest.fixture
def queue(store: Store) -> RelayQueueStore:
    """The test's store (SQLite, then Redis: tests/state/conftest.py) as a relay queue."""
    assert isinstance(store, RelayQueueStore)
    return store


async def test_one_delivery_a_lane_in_order(queue: RelayQueueStore) -> None:
    for wid, lane in (("a1", "A"), ("a2", "A"), ("b1", "B")):
        assert await queue.relay_enqueue(item(wid, lane), LIMITS) == "queued"
    first = await queue.relay_claim(10, 30, frozenset())
    assert sorted(d.item.webhook_id for d in first) == ["a1", "b1"]
    assert await queue.relay_claim(10, 30, frozenset()) == []  # heads held, a2 waits
    a1 = next(d for d in first if d.item.webhook_id == "a1")
    await queue.relay_done(a1.id)
    (a2,) = await queue.relay_claim(10, 30, frozenset())
    assert a2.item.webhook_id == "a2" and a2.attempts == 0


async def test_retry_counts_and_keeps_the_lane_blocked_until_due(queue: RelayQueueStore) -> None:
    await queue.relay_enqueue(item("x1"), LIMITS)
    await queue.relay_enqueue(item("x2"), LIMITS)
    (x1,) = await queue.relay_claim(10, 30, frozenset())
    await queue.relay_retry(x1.id, 3600, 503, "HTTP 503", None)
    assert await queue.relay_claim(10, 30, frozenset()) == []  # x2 waits behind x1
    due = await queue.relay_next_due()
    assert due is not None and 3500 < due <= 3600
    await queue.relay_retry(x1.id, 0, 503, "HTTP 503", None)
    (again,) = await queue.relay_claim(10, 30, frozenset())
    assert again.item.webhook_id == "x1" and again.attempts == 2
    assert (again.last_status, again.last_error) == (503, "HTTP 503")


async def test_release_gives_a_claim_back_and_exclude_skips_lanes(queue: RelayQueueStore) -> None:
    await queue.relay_enqueue(item("r1"), LIMITS)
    (r1,) = await queue.relay_claim(10, 3600, frozenset())
    await queue.relay_release([r1.id])
    assert await queue.relay_claim(10, 30, frozenset({"L1"})) == []
    assert [d.id for d in await queue.relay_claim(10, 30, frozenset())] == [r1.id]


async def test_postpone_gives_a_claim_back_later_without_an_attempt(
        queue: RelayQueueStore) -> None:
    await queue.relay_enqueue(item("p1"), LIMITS)
    await queue.relay_enqueue(item("p2"), LIMITS)
    (p1,) = await queue.relay_claim(10, 30, frozenset())
    await queue.relay_postpone(p1.id, 3600)
    assert await queue.relay_claim(10, 30, frozenset()) == []  # p2 waits behind p1
    due = await queue.relay_next_due()
    assert due is not None and 3500 < due <= 3600
    await queue.relay_postpone(p1.id, 0)
    (again,) = await queue.relay_claim(10, 30, frozenset())
    assert again.item.webhook_id == "p1" and again.attempts == 0


async def test_duplicates_snapshots_and_the_tenant_bound(queue: RelayQueueStore) -> None:
    assert await queue.relay_enqueue(item("d1"), LIMITS) == "queued"
    assert await queue.relay_enqueue(item("d1"), LIMITS) == "duplicate"
    (d1,) = await queue.relay_claim(1, 30, frozenset())
    await queue.relay_done(d1.id)
    assert await queue.relay_enqueue(item("d1"), LIMITS) == "duplicate"  # even delivered
    assert await queue.relay_enqueue(item("s1", body=None), LIMITS) == "queued"
    assert await queue.relay_enqueue(item("s2", body=None), LIMITS) == "coalesced"
    assert await queue.relay_enqueue(item("b1"), LIMITS) == "queued"
    assert await queue.relay_enqueue(item("s3", body=None), LIMITS) == "queued"  # after b1
    for n in range(2):
        assert await queue.relay_enqueue(item(f"f{n}", lane=f"F{n}"), LIMITS) == "queued"
    assert await queue.relay_enqueue(item("over", lane="F9"), LIMITS) == "full"
    assert await queue.relay_enqueue(item("other", tenant="u"), LIMITS) == "queued"


async def test_dead_letters_listed_replayed_and_dropped(queue: RelayQueueStore) -> None:
    await queue.relay_enqueue(item("z1", body=None), LIMITS)
    await queue.relay_enqueue(item("z2"), LIMITS)
    (z1,) = await queue.relay_claim(1, 30, frozenset())
    await queue.relay_retry(z1.id, 0, 0, "timeout", None)
    (z1,) = await queue.relay_claim(1, 30, frozenset())
    await queue.relay_bury(z1.id, 500, "HTTP 500", b'{"made": 1}', 3600)
    (z2,) = await queue.relay_claim(1, 30, frozenset())  # the lane moves on
    assert z2.item.webhook_id == "z2"
    await queue.relay_bury(z2.id, 410, "HTTP 410", None, 3600)
    dead = await queue.relay_dead("t", 10)
    assert [d.delivery.item.webhook_id for d in dead] == ["z2", "z1"]  # newest first
    assert await queue.relay_dead("u", 10) == []
    z1_dead = await queue.relay_dead_get("t", "z1")
    assert z1_dead is not None
    assert (z1_dead.delivery.attempts, z1_dead.delivery.last_status) == (2, 500)
    assert z1_dead.delivery.item.body == b'{"made": 1}'  # the snapshot it sent
    assert await queue.relay_replay("t", "z1")
    assert not await queue.relay_replay("t", "z1")
    (back,) = await queue.relay_claim(1, 30, frozenset())
    assert back.item.webhook_id == "z1" and back.attempts == 0
    assert await queue.relay_drop("t", "z2") and not await queue.relay_drop("t", "z2")
    assert await queue.relay_dead("t", 10) == []
