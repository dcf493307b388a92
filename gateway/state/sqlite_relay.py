"""The push relay's queue in the SQLite store (the contract: gateway/state/relay_queue.py).

Every change runs in the store's BEGIN IMMEDIATE transaction, so the workers of one host
claim, retry and bury each other's deliveries atomically. ``relay_queue`` holds what
waits (the AUTOINCREMENT id is the order within a lane: ids are never reused, so a
replayed dead letter goes to its lane's end); ``relay_heads`` each lane's oldest delivery
(the only one that may be claimed) and when it may be, so a look reads the due heads
through an index instead of every lane's head (the Redis store's ``ready`` set); it is
derived from ``relay_queue`` and kept by :func:`_rehead` in the transaction of every
change, and rebuilt whenever a process opens the store. ``relay_dead`` holds the dead
letters. A webhook id is remembered in the store's ``once`` table (the replay window), so
a notification the backend posts again is a duplicate even once delivered."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from gateway.state.relay_queue import (
    DeadLetter,
    Enqueued,
    NewDelivery,
    QueuedDelivery,
    RelayQueueLimits,
)

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS relay_queue (
  id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, lane TEXT NOT NULL,
  webhook_id TEXT NOT NULL, sealed TEXT NOT NULL, task_id TEXT NOT NULL, body BLOB,
  event BLOB NOT NULL, dropped TEXT NOT NULL, trace TEXT NOT NULL,
  attempts INTEGER NOT NULL, last_status INTEGER NOT NULL, last_error TEXT NOT NULL,
  due_at REAL NOT NULL, leased_until REAL NOT NULL);
CREATE INDEX IF NOT EXISTS relay_queue_by_lane ON relay_queue (lane, id);
CREATE INDEX IF NOT EXISTS relay_queue_by_tenant ON relay_queue (tenant);
CREATE TABLE IF NOT EXISTS relay_dead (
  tenant TEXT NOT NULL, webhook_id TEXT NOT NULL, lane TEXT NOT NULL, sealed TEXT NOT NULL,
  task_id TEXT NOT NULL, body BLOB, event BLOB NOT NULL, dropped TEXT NOT NULL,
  trace TEXT NOT NULL, attempts INTEGER NOT NULL, last_status INTEGER NOT NULL,
  last_error TEXT NOT NULL, died_at REAL NOT NULL, expires_at REAL NOT NULL,
  PRIMARY KEY (tenant, webhook_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS relay_heads (
  lane TEXT PRIMARY KEY, id INTEGER NOT NULL, ready_at REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relay_heads_by_time ON relay_heads (ready_at, id);
BEGIN IMMEDIATE;
DELETE FROM relay_heads;
INSERT INTO relay_heads SELECT lane, MIN(id), MAX(due_at, leased_until) FROM relay_queue
  GROUP BY lane;
COMMIT;
"""

_ITEM = "tenant, lane, webhook_id, sealed, task_id, body, event, dropped, trace"
_OUTCOME = "attempts, last_status, last_error"
# The lanes' heads that may be claimed now, first due first (relay_heads_by_time).
_DUE_HEADS = ("SELECT q.id, " + ", ".join(f"q.{c.strip()}" for c in _ITEM.split(","))
              + ", q.attempts, q.last_status, q.last_error FROM relay_heads h "
              "JOIN relay_queue q ON q.id = h.id WHERE h.ready_at <= ? "
              "ORDER BY h.ready_at, h.id LIMIT ?")


def _delivery(row: tuple[Any, ...]) -> QueuedDelivery:
    return QueuedDelivery(row[0], NewDelivery(*row[1:10]), row[10], row[11], row[12])


def _dead(row: tuple[Any, ...]) -> DeadLetter:
    return DeadLetter(QueuedDelivery(0, NewDelivery(*row[0:9]), row[9], row[10], row[11]),
                      row[12], row[13])


def _rehead(db: sqlite3.Connection, lane: str) -> None:
    """``lane``'s row in relay_heads after a change to its deliveries: its oldest one and
    when it may be claimed (due, and no lease on it), or none when the lane is empty.
    (SCHEMA's rebuild does the same for every lane: in a bare-column GROUP BY, SQLite
    takes due_at and leased_until from the row MIN(id) picks.)"""
    db.execute("DELETE FROM relay_heads WHERE lane = ?", (lane,))
    db.execute("INSERT INTO relay_heads SELECT lane, id, MAX(due_at, leased_until) FROM "
               "relay_queue WHERE lane = ? ORDER BY id LIMIT 1", (lane,))


def _change(db: sqlite3.Connection, delivery_id: int, sql: str,
            params: tuple[Any, ...]) -> None:
    """One change to a queued delivery, then its lane's head again."""
    row = db.execute("SELECT lane FROM relay_queue WHERE id = ?", (delivery_id,)).fetchone()
    if row is not None:
        db.execute(sql, params)
        _rehead(db, row[0])


def _append(db: sqlite3.Connection, row: tuple[Any, ...], now: float) -> None:
    """A delivery (the _ITEM columns) at its lane's end, due now: the head of a lane that
    had none (a lane with one keeps it)."""
    added = db.execute(f"INSERT INTO relay_queue ({_ITEM}, {_OUTCOME}, due_at, leased_until) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', ?, 0)", (*row, now))
    db.execute("INSERT OR IGNORE INTO relay_heads VALUES (?, ?, ?)",
               (row[1], added.lastrowid, now))


def _item_row(item: NewDelivery) -> tuple[Any, ...]:
    return (item.tenant, item.lane, item.webhook_id, item.sealed, item.task_id, item.body,
            item.event, item.dropped, item.trace)


def enqueue(db: sqlite3.Connection, item: NewDelivery, limits: RelayQueueLimits,
            now: float) -> Enqueued:
    key = "relay-id:" + item.webhook_id
    db.execute("DELETE FROM once WHERE key = ? AND expires <= ?", (key, now))
    if db.execute("SELECT 1 FROM once WHERE key = ?", (key,)).fetchone() is not None:
        return "duplicate"
    if item.body is None:
        last = db.execute("SELECT body IS NULL AND attempts = 0 AND leased_until <= ? FROM "
                          "relay_queue WHERE lane = ? ORDER BY id DESC LIMIT 1",
                          (now, item.lane)).fetchone()
        if last is not None and last[0]:
            return "coalesced"
    waiting = db.execute("SELECT COUNT(*) FROM relay_queue WHERE tenant = ?",
                         (item.tenant,)).fetchone()[0]
    if waiting >= limits.max_per_tenant:
        return "full"
    db.execute("INSERT INTO once VALUES (?, '', ?)", (key, now + limits.dedupe_ttl))
    _append(db, _item_row(item), now)
    return "queued"


def claim(db: sqlite3.Connection, limit: int, lease: float, exclude: frozenset[str],
          now: float) -> list[QueuedDelivery]:
    rows = db.execute(_DUE_HEADS, (now, limit + len(exclude))).fetchall()
    claimed = [_delivery(row) for row in rows if row[2] not in exclude][:limit]
    db.executemany("UPDATE relay_queue SET leased_until = ? WHERE id = ?",
                   [(now + lease, d.id) for d in claimed])
    db.executemany("UPDATE relay_heads SET ready_at = ? WHERE lane = ?",
                   [(now + lease, d.item.lane) for d in claimed])
    return claimed


def next_due(db: sqlite3.Connection, now: float) -> float | None:
    row = db.execute("SELECT MIN(ready_at) FROM relay_heads").fetchone()
    return None if row is None or row[0] is None else max(0.0, row[0] - now)


def retry(db: sqlite3.Connection, delivery_id: int, delay: float, status: int, error: str,
          body: bytes | None, now: float) -> None:
    _change(db, delivery_id, "UPDATE relay_queue SET attempts = attempts + 1, "
            "last_status = ?, last_error = ?, body = COALESCE(?, body), due_at = ?, "
            "leased_until = 0 WHERE id = ?", (status, error, body, now + delay, delivery_id))


def postpone(db: sqlite3.Connection, delivery_id: int, delay: float, now: float) -> None:
    """Due again after ``delay``, its attempts as they were (a destination's open circuit)."""
    _change(db, delivery_id, "UPDATE relay_queue SET due_at = ?, leased_until = 0 WHERE id = ?",
            (now + delay, delivery_id))


def done(db: sqlite3.Connection, delivery_id: int) -> None:
    _change(db, delivery_id, "DELETE FROM relay_queue WHERE id = ?", (delivery_id,))


def release(db: sqlite3.Connection, delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        _change(db, delivery_id, "UPDATE relay_queue SET leased_until = 0 WHERE id = ?",
                (delivery_id,))


def bury(db: sqlite3.Connection, delivery_id: int, status: int, error: str,
         body: bytes | None, ttl: float, now: float) -> None:
    db.execute(f"INSERT OR REPLACE INTO relay_dead ({_ITEM}, {_OUTCOME}, died_at, expires_at) "
               "SELECT tenant, lane, webhook_id, sealed, task_id, COALESCE(?, body), event, "
               "dropped, trace, attempts + 1, ?, ?, ?, ? FROM relay_queue WHERE id = ?",
               (body, status, error, now, now + ttl, delivery_id))
    done(db, delivery_id)


def replay(db: sqlite3.Connection, tenant: str, webhook_id: str, now: float) -> bool:
    row = db.execute(f"SELECT {_ITEM} FROM relay_dead WHERE tenant = ? AND webhook_id = ?",
                     (tenant, webhook_id)).fetchone()
    if row is None:
        return False
    _append(db, row, now)
    db.execute("DELETE FROM relay_dead WHERE tenant = ? AND webhook_id = ?",
               (tenant, webhook_id))
    return True


_DEAD = f"SELECT {_ITEM}, {_OUTCOME}, died_at, expires_at FROM relay_dead"


def dead(db: sqlite3.Connection, tenant: str, limit: int, now: float) -> list[DeadLetter]:
    return [_dead(row) for row in db.execute(
        f"{_DEAD} WHERE tenant = ? AND expires_at > ? ORDER BY died_at DESC LIMIT ?",
        (tenant, now, limit))]


def dead_get(db: sqlite3.Connection, tenant: str, webhook_id: str,
             now: float) -> DeadLetter | None:
    row = db.execute(f"{_DEAD} WHERE tenant = ? AND webhook_id = ? AND expires_at > ?",
                     (tenant, webhook_id, now)).fetchone()
    return None if row is None else _dead(row)


def prune(db: sqlite3.Connection, now: float) -> None:
    db.execute("DELETE FROM relay_dead WHERE expires_at <= ?", (now,))


class SqliteRelayQueue:
    """RelayQueueStore for SqliteStore, which supplies the two runners."""

    async def _relay_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError  # SqliteStore: a write transaction on its thread

    async def _relay_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError  # SqliteStore: a read on its thread

    async def relay_enqueue(self, item: NewDelivery, limits: RelayQueueLimits) -> Enqueued:
        return await self._relay_write(lambda db: enqueue(db, item, limits, time.time()))

    async def relay_claim(self, limit: int, lease: float,
                          exclude: frozenset[str]) -> list[QueuedDelivery]:
        return await self._relay_write(lambda db: claim(db, limit, lease, exclude,
                                                        time.time()))

    async def relay_next_due(self) -> float | None:
        return await self._relay_read(lambda db: next_due(db, time.time()))

    async def relay_done(self, delivery_id: int) -> None:
        await self._relay_write(lambda db: done(db, delivery_id))

    async def relay_release(self, delivery_ids: list[int]) -> None:
        await self._relay_write(lambda db: release(db, delivery_ids))

    async def relay_postpone(self, delivery_id: int, delay: float) -> None:
        await self._relay_write(lambda db: postpone(db, delivery_id, delay, time.time()))

    async def relay_retry(self, delivery_id: int, delay: float, status: int, error: str,
                          body: bytes | None) -> None:
        await self._relay_write(lambda db: retry(db, delivery_id, delay, status, error, body,
                                                 time.time()))

    async def relay_bury(self, delivery_id: int, status: int, error: str,
                         body: bytes | None, ttl: float) -> None:
        await self._relay_write(lambda db: bury(db, delivery_id, status, error, body, ttl,
                                                time.time()))

    async def relay_dead(self, tenant: str, limit: int) -> list[DeadLetter]:
        return await self._relay_read(lambda db: dead(db, tenant, limit, time.time()))

    async def relay_dead_get(self, tenant: str, webhook_id: str) -> DeadLetter | None:
        return await self._relay_read(lambda db: dead_get(db, tenant, webhook_id,
                                                          time.time()))

    async def relay_replay(self, tenant: str, webhook_id: str) -> bool:
        return await self._relay_write(lambda db: replay(db, tenant, webhook_id, time.time()))

    async def relay_drop(self, tenant: str, webhook_id: str) -> bool:
        return await self._relay_write(lambda db: db.execute(
            "DELETE FROM relay_dead WHERE tenant = ? AND webhook_id = ?",
            (tenant, webhook_id)).rowcount > 0)
