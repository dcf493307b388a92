"""The SQLite relay queue's lane heads (gateway/state/sqlite_relay.py, ``relay_heads``):
kept in step with the queue by every change, rebuilt when a store opens, and what makes a
look cheap — the worker's reads use the heads' time index, never a scan of the queue
(bench/relay_queue_look.py measures it: docs/state.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.state.relay_queue import NewDelivery, RelayQueueLimits
from gateway.state.sqlite_relay import _DUE_HEADS
from gateway.state.sqlite_store import SqliteStore

LIMITS = RelayQueueLimits(max_per_tenant=1000, dedupe_ttl=60)
# What relay_heads must hold: each lane's oldest delivery, ready when due and not leased.
DERIVED = ("SELECT lane, MIN(id), MAX(due_at, leased_until) FROM relay_queue GROUP BY lane "
           "ORDER BY lane")


def item(wid: str, lane: str) -> NewDelivery:
    return NewDelivery(tenant="t", lane=lane, webhook_id=wid, sealed="s", task_id="task",
                       body=b"{}", event=b"e", dropped="[]", trace="{}")


def heads(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(relay_heads, what the queue says they should be), read from the file."""
    with sqlite3.connect(path) as db:
        return (db.execute("SELECT lane, id, ready_at FROM relay_heads ORDER BY lane")
                .fetchall(), db.execute(DERIVED).fetchall())


async def test_every_change_keeps_the_heads_in_step(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    for n in range(6):
        await store.relay_enqueue(item(f"w{n}", f"L{n % 3}"), LIMITS)
    steps = []
    a, b, c = sorted(await store.relay_claim(10, 30, frozenset()), key=lambda d: d.id)
    steps.append("claim")
    await store.relay_done(a.id)  # L0's second delivery becomes its head
    steps.append("done")
    await store.relay_retry(b.id, 60, 503, "busy", None)  # L1 waits a minute
    steps.append("retry")
    await store.relay_bury(c.id, 400, "bad", None, 3600)  # L2's second becomes its head
    steps.append("bury")
    (d,) = [x for x in await store.relay_claim(10, 30, frozenset()) if x.item.lane == "L0"]
    await store.relay_release([d.id])
    steps.append("release")
    assert await store.relay_replay("t", c.item.webhook_id)  # to L2's end: not its head
    steps.append("replay")
    held, derived = heads(path)
    await store.close()
    assert held == derived, steps
    # Ids 1-6 went to L0, L1, L2 in turn; the replayed dead letter is 7.
    assert [(lane, n) for lane, n, _ in held] == [("L0", 4), ("L1", 2), ("L2", 6)]
    assert d.id == 4


async def test_a_store_opened_rebuilds_stale_heads(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    for n in range(4):
        await store.relay_enqueue(item(f"w{n}", f"L{n % 2}"), LIMITS)
    await store.close()
    with sqlite3.connect(path) as db:  # as a store from before relay_heads left it
        db.execute("DELETE FROM relay_heads")
        db.execute("INSERT INTO relay_heads VALUES ('gone', 99, 0)")
    again = SqliteStore(str(path))
    held, derived = heads(path)
    assert held == derived and [lane for lane, _, _ in held] == ["L0", "L1"]
    claimed = await again.relay_claim(10, 30, frozenset())
    await again.close()
    assert sorted(d.item.webhook_id for d in claimed) == ["w0", "w1"]


async def test_a_look_reads_the_due_heads_by_their_index(tmp_path: Path) -> None:
    """The claim's query and next_due's: an index search on relay_heads, and the queue's
    rows only by id: no scan, nothing grouped."""
    await SqliteStore(str(tmp_path / "state.db")).close()
    with sqlite3.connect(tmp_path / "state.db") as db:
        plans = {sql: " | ".join(row[3] for row in db.execute(
            "EXPLAIN QUERY PLAN " + sql, args))
            for sql, args in ((_DUE_HEADS, (0.0, 10)),
                              ("SELECT MIN(ready_at) FROM relay_heads", ()))}
    for sql, plan in plans.items():
        assert "SCAN" not in plan and "GROUP BY" not in plan, (sql, plan)
        assert "relay_heads_by_time" in plan, (sql, plan)


async def test_a_postponed_delivery_moves_its_head(tmp_path: Path) -> None:
    """An open circuit's postpone (the breaker's store step): its lane's head is due at the
    end of the delay, not at the end of the lease its claim set."""
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    await store.relay_enqueue(item("w0", "L0"), LIMITS)
    (claimed,) = await store.relay_claim(10, 30, frozenset())
    await store.relay_postpone(claimed.id, 600)
    held, derived = heads(path)
    await store.close()
    assert held == derived  # without the head moved: the lease's end, 30 s, not 600 s
