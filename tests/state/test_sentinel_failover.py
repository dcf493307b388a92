"""Redis behind Sentinel (issue 31 item 5, docs/state.md "Redis Sentinel and failover"):
real redis-servers (a primary, two replicas) and a real sentinel; the primary is killed
(SIGKILL) in the middle of a load of task-index writes, journal appends and push-relay
deliveries queued, the sentinel promotes a replica, and the store carries on. Every write
the store acknowledged (it waited for a replica: `replica_acks`) is read back from the
new primary: each queued delivery claimed from it, in its lane's order."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from gateway.config.state import StateConfig
from gateway.state import Store, StoreError, TaskRecord, open_store
from gateway.state.journal import JournalLimits
from gateway.state.relay_queue import NewDelivery, RelayQueueLimits, RelayQueueStore
from tests.support.sentinel_process import SERVICE, SentinelSetup, sentinel_setup
from tests.support.waiting import wait_until

WRITERS = 4  # concurrent writers, each its own stream of tasks and one journal
BEFORE = 80  # task records acknowledged before the primary is killed
AFTER = 80  # task records acknowledged after the promotion, then the load stops
LIMITS = JournalLimits(max_events=100_000, max_bytes=64 << 20, ttl=3600, idle_ttl=3600)
QUEUE = RelayQueueLimits(max_per_tenant=100_000, dedupe_ttl=3600)


@pytest.fixture
def sentinels() -> Iterator[SentinelSetup]:
    with sentinel_setup() as setup:
        yield setup


def sentinel_state(setup: SentinelSetup, **sentinel: Any) -> StateConfig:
    return StateConfig.model_validate({
        "backend": "redis", "timeout": 1.0, "key_prefix": f"fo-{uuid.uuid4().hex[:8]}:",
        "sentinel": {"hosts": setup.hosts, "service": SERVICE, "ack_timeout": 0.5,
                     "failover_wait": 20, **sentinel}})


class Load:
    """Writers that record tasks, append journal events and queue deliveries (one lane
    each) until AFTER records were acknowledged after the promotion, keeping what the
    store acknowledged, every error it raised and the longest call."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.tasks: list[TaskRecord] = []
        self.events: dict[str, list[tuple[int, bytes]]] = {}
        self.queued: dict[str, list[str]] = {}  # lane -> webhook ids, in order
        self.errors: list[str] = []
        self.promoted = asyncio.Event()
        self.after_promotion = 0
        self.slowest = 0.0  # seconds

    async def _call(self, call: Any) -> tuple[bool, Any]:
        started = time.monotonic()
        try:
            return True, await call
        except StoreError as exc:
            self.errors.append(str(exc))
            return False, None
        finally:
            self.slowest = max(self.slowest, time.monotonic() - started)

    async def writer(self, w: int) -> None:
        journal = f"stream-{w}"
        held = self.events.setdefault(journal, [])
        position = 0  # the writer's place in its journal: an append retried is not doubled
        i = 0
        while self.after_promotion < AFTER:
            now = time.time()
            record = TaskRecord("t", f"{w}-{i}", f"ctx-{w}", "TASK_STATE_WORKING", now, now)
            ok, _ = await self._call(self.store.record_task(record))
            if ok:
                self.tasks.append(record)
                self.after_promotion += self.promoted.is_set()
            data = f"event {w}-{i}".encode()
            ok, seqs = await self._call(self.store.journal_append(
                "t", journal, [data], False, LIMITS, position))
            if ok:
                position = seqs[0]
                held.append((position, data))
            assert isinstance(self.store, RelayQueueStore)
            delivery = NewDelivery(tenant="t", lane=f"lane-{w}", webhook_id=f"wh-{w}-{i}",
                                   sealed="s", task_id=f"{w}-{i}", body=data, event=b"",
                                   dropped="[]", trace="{}")
            ok, outcome = await self._call(self.store.relay_enqueue(delivery, QUEUE))
            if ok:
                # "duplicate": the store's own retry through the failover found the first
                # try's write (made on the old primary and carried over): queued once.
                assert outcome in ("queued", "duplicate"), outcome
                self.queued.setdefault(delivery.lane, []).append(delivery.webhook_id)
            i += 1


async def test_a_primary_failover_loses_no_acknowledged_write(
        sentinels: SentinelSetup) -> None:
    state = sentinel_state(sentinels)
    store = open_store(state)
    load = Load(store)
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(120):
            writers = [asyncio.create_task(load.writer(w)) for w in range(WRITERS)]
            await wait_until(lambda: len(load.tasks) >= BEFORE, "writes before the kill",
                             timeout=30)
            old = sentinels.kill_primary()
            killed_at = len(load.tasks)
            new = await asyncio.to_thread(sentinels.wait_for_promotion)
            load.promoted.set()
            await asyncio.gather(*writers)
    await store.close()
    assert new != old and len(load.tasks) >= killed_at + AFTER
    # One failover: a second, on the heels of the first, is what WAIT cannot cover (see
    # DOWN_AFTER_MS); should the sentinel do one, this says so rather than "lost".
    assert sentinels.sentinel_log().count("+switch-master") == 1, sentinels.sentinel_log()
    # Every acknowledged record and journal event, read through a new client (so from
    # the new primary, as the sentinel names it).
    reader = open_store(state)
    lost: list[Any] = [(r, got) for r in load.tasks
                       if (got := await reader.get_task("t", r.task_id)) != r]
    for journal, held in load.events.items():
        read = await reader.journal_read("t", journal, 0, 1_000_000)
        kept = {entry.seq: entry.data for entry in read.entries}
        lost += [f"{journal}#{seq}" for seq, data in held if kept.get(seq) != data]
    lost += await lost_deliveries(reader, load.queued)
    await reader.close()
    assert lost == [], (sentinels.primary_port(), sentinels.sizes(), lost[:3])
    lines = [line for line in logs if line["event"] in (
        "state store error", "state store available again")]
    print(f"\nfailover {old} -> {new}: {len(load.tasks)} records, "
          f"{sum(map(len, load.queued.values()))} deliveries acknowledged, "
          f"{len(load.errors)} errors {load.errors[:5]}, slowest call {load.slowest:.2f} s")
    print("\n".join(map(str, lines)))
    # The failover was seen (calls retried) and its end too; few calls, if any, failed
    # (a WAIT that ran out while the promoted primary's replica resynchronised), and none
    # waited past the bound.
    assert {line["event"] for line in lines} == {"state store error",
                                                 "state store available again"}
    assert len(load.errors) <= 2 * WRITERS, load.errors
    assert state.sentinel is not None
    assert load.slowest < state.sentinel.failover_wait + 2 * state.timeout


async def lost_deliveries(queue: Store, queued: dict[str, list[str]]) -> list[str]:
    """Every queued delivery, claimed lane head after lane head and done: the acknowledged
    ones missing, or out of their lane's order. (A call refused may have queued its
    delivery all the same: such ones may be there too, in their place.)"""
    assert isinstance(queue, RelayQueueStore)
    found: dict[str, list[str]] = {}
    while claimed := await queue.relay_claim(100, 60, frozenset()):
        for d in claimed:
            found.setdefault(d.item.lane, []).append(d.item.webhook_id)
            await queue.relay_done(d.id)
    lost = []
    for lane, ids in queued.items():
        acknowledged = set(ids)
        got = [wid for wid in found.get(lane, []) if wid in acknowledged]
        if got != ids:
            lost.append(f"{lane}: {sorted(set(ids) - set(got))[:3]} missing, "
                        f"or out of order: {got[:5]}")
    return lost


async def test_a_write_fewer_replicas_acknowledged_is_refused(
        sentinels: SentinelSetup) -> None:
    """replica_acks above the replicas there are: the write is made on the primary but
    not acknowledged (WAIT says two of three), so the caller is refused."""
    state = sentinel_state(sentinels, replica_acks=3)
    store = open_store(state)
    # Two replicas at most can say yes (fewer if one is slow to on a busy machine).
    with pytest.raises(StoreError, match=r"[0-2] of 3 replicas acknowledged the write"):
        await store.seen_once("k", 60)
    with pytest.raises(StoreError, match=r"[0-2] of 3 replicas acknowledged the write"):
        await store.record_task(TaskRecord("t", "x", "c", "TASK_STATE_WORKING", 1.0, 1.0))
    assert isinstance(store, RelayQueueStore)
    delivery = NewDelivery(tenant="t", lane="L", webhook_id="wh-1", sealed="s",
                           task_id="x", body=b"{}", event=b"", dropped="[]", trace="{}")
    with pytest.raises(StoreError, match=r"[0-2] of 3 replicas acknowledged the write"):
        await store.relay_enqueue(delivery, QUEUE)
    # The agent, told to retry, posts it again: the answer stands for the first call's
    # delivery, so it waits for the replicas too.
    with pytest.raises(StoreError, match=r"[0-2] of 3 replicas acknowledged the write"):
        await store.relay_enqueue(delivery, QUEUE)
    # A claim is not acknowledged to anyone (lost, the lease is only shorter): no WAIT.
    (claimed,) = await store.relay_claim(10, 60, frozenset())
    assert claimed.item == delivery
    with pytest.raises(StoreError, match=r"[0-2] of 3 replicas acknowledged the write"):
        await store.relay_done(claimed.id)
    await store.close()
    assert state.sentinel is not None
    both = open_store(state.model_copy(update={"timeout": 5.0, "sentinel": state.sentinel
                                               .model_copy(update={"replica_acks": 2,
                                                                   "ack_timeout": 4.0})}))
    assert not await both.seen_once("k", 60)  # the refused write was made all the same
    await both.record_task(TaskRecord("t", "y", "c", "TASK_STATE_WORKING", 1.0, 1.0))
    got = await both.get_task("t", "y")
    assert got is not None and got.context_id == "c"
    assert isinstance(both, RelayQueueStore)
    assert await both.relay_enqueue(delivery, QUEUE) == "duplicate"  # queued all the same
    await both.close()
