"""The push relay's queue in the SQLite store (the contract: gateway/state/relay_queue.py).

Every change runs in the store's BEGIN IMMEDIATE transaction, so the workers of one host
claim, retry and bury each other's deliveries atomically. ``relay_queue`` holds what
waits (the AUTOINCREMENT id is the order within a lane: ids are never reused, so a
replayed dead letter goes to its lane's end); ``relay_dead`` the dead letters. A
webhook id is remembered in the store's ``once`` table (the replay window), so a
notification the backend posts again is a duplicate even once delivered."""

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
"""

_ITEM = "tenant, lane, webhook_id, sealed, task_id, body, event, dropped, trace"
_OUTCOME = "attempts, last_status, last_error"
# Each lane's oldest delivery: the only one of the lane that may be claimed.
_HEAD_JOIN = ("FROM relay_queue q JOIN (SELECT MIN(id) AS head FROM relay_queue GROUP BY "
              "lane) h ON q.id = h.head")
_HEADS = ("SELECT q.id, " + ", ".join(f"q.{c.strip()}" for c in _ITEM.split(","))
          + f", q.attempts, q.last_status, q.last_error {_HEAD_JOIN}")


def _delivery(row: tuple[Any, ...]) -> QueuedDelivery:
    return QueuedDelivery(row[0], NewDelivery(*row[1:10]), row[10], row[11], row[12])


def _dead(row: tuple[Any, ...]) -> DeadLetter:
    return DeadLetter(QueuedDelivery(0, NewDelivery(*row[0:9]), row[9], row[10], row[11]),
                      row[12], row[13])


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
    db.execute(f"INSERT INTO relay_queue ({_ITEM}, {_OUTCOME}, due_at, leased_until) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', ?, 0)", (*_item_row(item), now))
    return "queued"


def claim(db: sqlite3.Connection, limit: int, lease: float, exclude: frozenset[str],
          now: float) -> list[QueuedDelivery]:
    rows = db.execute(f"{_HEADS} WHERE q.due_at <= ? AND q.leased_until <= ? "
                      "ORDER BY q.due_at, q.id LIMIT ?",
                      (now, now, limit + len(exclude))).fetchall()
    claimed = [_delivery(row) for row in rows if row[2] not in exclude][:limit]
    db.executemany("UPDATE relay_queue SET leased_until = ? WHERE id = ?",
                   [(now + lease, d.id) for d in claimed])
    return claimed


def next_due(db: sqlite3.Connection, now: float) -> float | None:
    row = db.execute(f"SELECT MIN(MAX(q.due_at, q.leased_until)) {_HEAD_JOIN}").fetchone()
    return None if row is None or row[0] is None else max(0.0, row[0] - now)


def retry(db: sqlite3.Connection, delivery_id: int, delay: float, status: int, error: str,
          body: bytes | None, now: float) -> None:
    db.execute("UPDATE relay_queue SET attempts = attempts + 1, last_status = ?, "
               "last_error = ?, body = COALESCE(?, body), due_at = ?, leased_until = 0 "
               "WHERE id = ?", (status, error, body, now + delay, delivery_id))


def bury(db: sqlite3.Connection, delivery_id: int, status: int, error: str,
         body: bytes | None, ttl: float, now: float) -> None:
    db.execute(f"INSERT OR REPLACE INTO relay_dead ({_ITEM}, {_OUTCOME}, died_at, expires_at) "
               "SELECT tenant, lane, webhook_id, sealed, task_id, COALESCE(?, body), event, "
               "dropped, trace, attempts + 1, ?, ?, ?, ? FROM relay_queue WHERE id = ?",
               (body, status, error, now, now + ttl, delivery_id))
    db.execute("DELETE FROM relay_queue WHERE id = ?", (delivery_id,))


def replay(db: sqlite3.Connection, tenant: str, webhook_id: str, now: float) -> bool:
    row = db.execute(f"SELECT {_ITEM} FROM relay_dead WHERE tenant = ? AND webhook_id = ?",
                     (tenant, webhook_id)).fetchone()
    if row is None:
        return False
    db.execute(f"INSERT INTO relay_queue ({_ITEM}, {_OUTCOME}, due_at, leased_until) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', ?, 0)", (*row, now))
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
        await self._relay_write(lambda db: db.execute("DELETE FROM relay_queue WHERE id = ?",
                                                      (delivery_id,)))

    async def relay_release(self, delivery_ids: list[int]) -> None:
        await self._relay_write(lambda db: db.executemany(
            "UPDATE relay_queue SET leased_until = 0 WHERE id = ?",
            [(i,) for i in delivery_ids]))

    async def relay_postpone(self, delivery_id: int, delay: float) -> None:
        await self._relay_write(lambda db: db.execute(
            "UPDATE relay_queue SET due_at = ?, leased_until = 0 WHERE id = ?",
            (time.time() + delay, delivery_id)))

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
