"""The SQLite store: one file in WAL mode, used through one connection on one thread of
its own (the event loop never waits for a lock or an fsync; small writes, a task's
record, and the stream journal's appends are tried on the loop's own connection first
when the lock is free: sqlite_loop.py). Several processes on one host (gateway
workers) may open the same file: writes that must be atomic run in BEGIN IMMEDIATE
transactions, so they see each other's tasks, replay marks and rate-limit buckets.

Opening is serialized across processes by an exclusive lock on a file beside the
database (``<path>-init.lock``, see :func:`connect`): switching a fresh file to WAL needs
SQLite's exclusive lock, and two processes doing it at once may get "database is locked"
without SQLite's busy handler ever being asked (it refuses to wait where waiting could
deadlock). With the lock, workers starting together open the file one after the other."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import gateway.state.sqlite_journal as sqlite_journal
import gateway.state.sqlite_relay as sqlite_relay
import gateway.state.sqlite_tasks as sqlite_tasks
from gateway.config.state import RetentionConfig
from gateway.state.base import (
    KeptOwner,
    StoreError,
    TaskPage,
    TaskQuery,
    TaskRecord,
    bucket,
    clamp_page_size,
    decode_token,
    encode_token,
)
from gateway.state.journal import JournalLimits, JournalRead, JournalSize
from gateway.state.sqlite_loop import LOOP_ROWS, LoopWriter
from gateway.state.sqlite_prune import CLAIMED, prune_tasks
from gateway.state.sqlite_relay import SqliteRelayQueue
from gateway.state.sqlite_tasks import COLUMNS, task_runs, write_runs

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS once (
  key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spent (
  key TEXT PRIMARY KEY, at REAL NOT NULL, expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buckets (
  key TEXT PRIMARY KEY, tokens REAL NOT NULL, ts REAL NOT NULL, full_at REAL NOT NULL)
  WITHOUT ROWID;
"""

# A binding: the first writer's value stays until it expires (Store.claim_all).
_CLAIM = "INSERT INTO once VALUES (?, ?, ?) " + CLAIMED
_KEYS_READ = 500  # keys a claim reads back per statement (SQLite's limit is 32,766)

# Seconds a process waits for another to finish opening the file (the lock below), and
# for SQLite's own locks (busy_timeout) after that.
OPEN_WAIT = 10.0


@contextlib.contextmanager
def _opening(path: str) -> Iterator[None]:
    """Hold the file's opening lock: one process at a time switches it to WAL and creates
    the schema. A lock file of its own, never the database: closing any descriptor of the
    database would drop SQLite's POSIX locks of this process. flock is released by the
    kernel when the holder dies, so a crashed opener blocks nobody. Left in place (removing
    a lock file races with its next user)."""
    fd = os.open(f"{path}-init.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + OPEN_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise sqlite3.OperationalError(
                        f"another process kept {path}-init.lock for {OPEN_WAIT:g} s") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # releases the lock


def connect(path: str) -> sqlite3.Connection:
    """A connection to the store's file, in WAL mode, with the schema in place."""
    memory = path == ":memory:"
    try:
        if not memory:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        with contextlib.nullcontext() if memory else _opening(path):
            db = sqlite3.connect(path, timeout=OPEN_WAIT, isolation_level=None)
            db.execute(f"PRAGMA busy_timeout = {int(OPEN_WAIT * 1000)}")
            if not memory:
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(sqlite_tasks.SCHEMA + _SCHEMA + sqlite_journal.SCHEMA
                             + sqlite_relay.SCHEMA)
            sqlite_tasks.add_agent_column(db)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot open the SQLite store {path}: {exc}") from exc
    return db


class SqliteStore(SqliteRelayQueue):
    backend = "sqlite"

    def __init__(self, path: str = ":memory:", retention: RetentionConfig | None = None,
                 *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.retention = retention or RetentionConfig()
        self._clock = clock  # the stream journal's expiry reads it (tests move it)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a2a-state")
        self._db: sqlite3.Connection | None = None
        # Small writes (a creation's record) on the loop's own connection when the lock
        # is free: gateway/state/sqlite_loop.py.
        self.loop_writer = None if path == ":memory:" else LoopWriter(path)
        try:
            self._pool.submit(self._connect).result()
        except BaseException:
            self._pool.shutdown(wait=False)
            raise

    def _connect(self) -> None:
        self._db = connect(self.path)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._db is None:
            raise StoreError("the SQLite store is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.path}: {exc}") from exc

    async def _relay_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._run(self._tx, fn)  # the relay queue (sqlite_relay.py)

    async def _relay_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._run(lambda: fn(self._connection()))

    def _connection(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a write transaction (BEGIN IMMEDIATE: one writer at a time across
        processes)."""
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    # The task index.

    async def record_task(self, record: TaskRecord) -> None:
        await self.record_tasks([record])

    async def record_tasks(self, records: Sequence[TaskRecord]) -> None:
        runs = task_runs(records)
        if runs:
            await self._write(lambda db: write_runs(db, runs), len(records))

    async def _write(self, write: Callable[[sqlite3.Connection], T], rows: int) -> T:
        """``write`` in a write transaction: on the loop's own connection when it is
        small (``rows`` 0: whatever its size, the caller bounds it) and the lock is free
        (sqlite_loop.py), else on the store's thread."""
        loop_writer = self.loop_writer
        if loop_writer is not None and self._db is not None and rows <= LOOP_ROWS:
            out: list[T] = []
            try:
                written = loop_writer.try_write(lambda db: out.append(write(db)))
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc
            if written:
                return out[0]
        return await self._run(self._tx, write)

    async def get_task(self, tenant: str, task_id: str) -> TaskRecord | None:
        def get() -> TaskRecord | None:
            assert self._db is not None
            row = self._db.execute(f"SELECT {COLUMNS} FROM tasks WHERE tenant = ? AND "
                                   "task_id = ?", (tenant, task_id)).fetchone()
            return None if row is None else TaskRecord(*row)
        return await self._run(get)

    async def list_tasks(self, query: TaskQuery, page_size: int | None = None,
                         page_token: str = "") -> TaskPage:
        size = clamp_page_size(page_size)
        cursor = decode_token(page_token)
        where: list[str] = ["tenant = ?"]
        args: list[Any] = [query.tenant]
        if query.owner is not None:
            where.append("owner = ?")
            args.append(query.owner)
        if query.context_id is not None:
            where.append("context_id = ?")
            args.append(query.context_id)
        if query.states:
            states = sorted(query.states)
            where.append(f"state IN ({','.join('?' for _ in states)})")
            args.extend(states)
        if query.status_after is not None:
            where.append("updated_at >= ?")
            args.append(query.status_after)
        filters = " AND ".join(where)
        page_where, page_args = filters, list(args)
        if cursor is not None:
            page_where += " AND (updated_at < ? OR (updated_at = ? AND task_id < ?))"
            page_args.extend([cursor[0], cursor[0], cursor[1]])

        def read() -> TaskPage:
            db = self._db
            assert db is not None
            db.execute("BEGIN")
            try:
                total = db.execute(f"SELECT COUNT(*) FROM tasks WHERE {filters}",
                                   args).fetchone()[0]
                rows = db.execute(f"SELECT {COLUMNS} FROM tasks WHERE {page_where} ORDER BY "
                                  "updated_at DESC, task_id DESC LIMIT ?",
                                  [*page_args, size + 1]).fetchall()
            finally:
                db.execute("COMMIT")
            records = [TaskRecord(*row) for row in rows[:size]]
            more = len(rows) > size
            token = encode_token((records[-1].updated_at, records[-1].task_id)) if more else ""
            return TaskPage(records, token, int(total))
        return await self._run(read)

    async def prune(self, older_than: float | None = None,
                    kept: Mapping[str, KeptOwner] | None = None) -> int:
        now = time.time()
        if older_than is None and self.retention.max_age > 0:
            older_than = now - self.retention.max_age
        max_tasks = self.retention.max_tasks

        def prune(db: sqlite3.Connection) -> int:
            dropped = prune_tasks(db, now, older_than, max_tasks, kept or {})
            db.execute("DELETE FROM once WHERE expires <= ?", (now,))
            db.execute("DELETE FROM spent WHERE expires <= ?", (now,))
            db.execute("DELETE FROM buckets WHERE full_at <= ?", (now,))
            sqlite_journal.prune(db, self._clock())
            sqlite_relay.prune(db, now)
            return dropped
        return await self._run(self._tx, prune)

    # The relay's replay and spent-seal facts.

    async def claim(self, key: str, value: str, ttl: float) -> str:
        return (await self.claim_all([(key, value)], ttl))[0]

    async def claim_all(self, items: Sequence[tuple[str, str]], ttl: float) -> list[str]:
        # One upsert a key (an expired binding is taken over, a live one stays), then the
        # values bound read back a chunk of keys at a time: a batch small enough is one
        # transaction on the loop's connection (sqlite_loop.py), no thread hop.
        def claim(db: sqlite3.Connection) -> list[str]:
            now = time.time()
            db.executemany(_CLAIM, [(key, value, now + ttl, now) for key, value in items])
            keys = list(dict.fromkeys(key for key, _ in items))
            bound: dict[str, str] = {}
            for start in range(0, len(keys), _KEYS_READ):
                part = keys[start:start + _KEYS_READ]
                bound.update(db.execute(
                    f"SELECT key, value FROM once WHERE key IN ({','.join('?' * len(part))})",
                    part).fetchall())
            return [str(bound[key]) for key, _ in items]
        return await self._write(claim, len(items)) if items else []

    async def claimed(self, key: str) -> str | None:
        def read() -> str | None:
            row = self._connection().execute(
                "SELECT value FROM once WHERE key = ? AND expires > ?",
                (key, time.time())).fetchone()
            return None if row is None else str(row[0])
        return await self._run(read)

    async def rebind(self, key: str, value: str, ttl: float) -> None:
        def bind(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO once VALUES (?, ?, ?)",
                       (key, value, time.time() + ttl))
        await self._run(self._tx, bind)

    async def swap(self, key: str, expected: str | None, value: str, ttl: float) -> bool:
        def swapped(db: sqlite3.Connection) -> bool:
            now = time.time()
            row = db.execute("SELECT value FROM once WHERE key = ? AND expires > ?",
                             (key, now)).fetchone()
            current = None if row is None else str(row[0])
            if current == value:  # this swap's own, retried after a lost reply
                return True
            if current != expected:
                return False
            db.execute("INSERT OR REPLACE INTO once VALUES (?, ?, ?)", (key, value, now + ttl))
            return True
        return bool(await self._run(self._tx, swapped))

    async def seen_once(self, key: str, ttl: float) -> bool:
        def first(db: sqlite3.Connection) -> bool:
            now = time.time()
            db.execute("DELETE FROM once WHERE key = ? AND expires <= ?", ("seen:" + key, now))
            return db.execute("INSERT OR IGNORE INTO once VALUES (?, '', ?)",
                              ("seen:" + key, now + ttl)).rowcount == 1
        return await self._run(self._tx, first)

    async def mark_spent(self, key: str, ttl: float, after: float = 0.0) -> None:
        def mark(db: sqlite3.Connection) -> None:
            now = time.time()
            db.execute("DELETE FROM spent WHERE key = ? AND expires <= ?", (key, now))
            db.execute("INSERT OR IGNORE INTO spent VALUES (?, ?, ?)",
                       (key, now + after, now + after + ttl))
        await self._run(self._tx, mark)

    async def is_spent(self, key: str) -> bool:
        def spent() -> bool:
            assert self._db is not None
            now = time.time()
            row = self._db.execute("SELECT at FROM spent WHERE key = ? AND expires > ?",
                                   (key, now)).fetchone()
            return row is not None and now >= row[0]
        return await self._run(spent)

    # Rate limits.

    async def take_tokens(self, key: str, rate: float, burst: float,
                          cost: float = 1.0) -> tuple[bool, float]:
        def take(db: sqlite3.Connection) -> tuple[bool, float]:
            now = time.time()
            row = db.execute("SELECT tokens, ts FROM buckets WHERE key = ?", (key,)).fetchone()
            tokens, last = (burst, now) if row is None else (row[0], row[1])
            allowed, retry_after, left = bucket(tokens, last, now, rate, burst, cost)
            full_at = now + ((burst - left) / rate if rate > 0 else 86400.0)
            db.execute("INSERT OR REPLACE INTO buckets VALUES (?, ?, ?, ?)",
                       (key, left, now, full_at))
            return allowed, retry_after
        return await self._run(self._tx, take)

    # The stream journal (gateway/state/sqlite_journal.py).

    async def journal_append(self, tenant: str, task_id: str, events: Sequence[bytes],
                             terminal: bool, limits: JournalLimits, after: int | None) -> list[int]:
        # On the loop's connection at any size (rows 0): a stream appends what one turn
        # of it read (gateway/streams/turns.py), which bounds the loop's time. On the
        # store's thread, measured with 16 busy journaled streams on one core, an append
        # of more than LOOP_ROWS events (most of a turn's) shared the core with the loop
        # and held the write lock meanwhile: the other appends found it taken and queued
        # behind it there (6% of them, 26 ms at the median); a new stream's first event
        # came 6.7-9 ms after a direct client's, 2.3-3 ms here (with CHECKPOINT_GAP).
        events = tuple(events)  # the caller's sequence is not read on another thread
        return await self._write(lambda db: sqlite_journal.append(
            db, tenant, task_id, events, terminal, limits, after, self._clock()), 0)

    async def journal_read(self, tenant: str, task_id: str, after: int,
                           limit: int) -> JournalRead:
        def read() -> JournalRead:
            assert self._db is not None
            return sqlite_journal.read(self._db, tenant, task_id, after, limit, self._clock())
        return await self._run(read)

    async def journal_size(self) -> JournalSize | None:
        def size() -> JournalSize:
            assert self._db is not None
            return sqlite_journal.size(self._db, self._clock())
        return await self._run(size)

    async def ping(self) -> None:
        def ping() -> None:
            assert self._db is not None
            self._db.execute("SELECT 1").fetchone()
        await self._run(ping)

    async def close(self) -> None:
        if self.loop_writer is not None:
            self.loop_writer.close()
        db, self._db = self._db, None
        if db is not None:
            await asyncio.get_running_loop().run_in_executor(self._pool, db.close)
        self._pool.shutdown(wait=False)
