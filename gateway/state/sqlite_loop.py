"""Small SQLite writes on the event loop's own connection, when the write lock is free.

Why: a call that creates a task waits until its record is in the store, so that any
other worker sees it at once (README "State", read-your-writes). Handing a one-row write
to the store's thread and back costs about as much as the write itself (two thread
switches, the GIL, the loop's wake-up pipe: ~56 of ~106 µs measured in process), and
with two workers nearly every such write carries one or two rows. So a small batch is
first tried on a second connection that only the loop thread uses:

- only when the write lock is free at once (``busy_timeout`` 0): when another worker or
  the store's thread is writing, the batch goes to the store's thread, which waits for
  the lock there; the loop never waits for a lock;
- a commit in WAL mode with ``synchronous = NORMAL`` appends to the WAL file (the page
  cache) without fsync (durable against a crash of the process, which is what a restart
  needs; not against the host's); checkpoints fsync, so this connection never runs one
  (``wal_autocheckpoint`` 0): every :data:`CHECKPOINT_EVERY` commits (and
  :data:`CHECKPOINT_GAP` seconds at least since the last), a passive one runs
  on a thread and a connection of their own — not the store's thread, where a write that
  found the lock taken (a stream's first journal append among them) would queue behind
  the checkpoint's copying and fsync (tens of ms with busy journaled streams);
- only batches of at most :data:`LOOP_ROWS` rows: the background writer's batches (up to
  `state.tasks.batch`) stay on the store's thread. A stream journal's appends come here
  at any size (each is what one turn of a stream read: sqlite_store.journal_append).

Not for ``:memory:`` (a second connection would open another, empty database).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import structlog

log = structlog.get_logger("a2a_gateway.state")

# The most rows a batch written on the loop may carry: a creating call's (one task, a
# few when several calls wait at one moment). At ~35k instructions a row, 32 rows are
# about a third of a millisecond of the loop.
LOOP_ROWS = 32

# Commits on the loop between two passive checkpoints. SQLite's own default checkpoints
# at 1,000 WAL pages; a one-row commit writes a handful (the row and its index entries),
# so this keeps the WAL about that size.
CHECKPOINT_EVERY = 200
# Seconds between two checkpoints at least, however many commits: busy journaled streams
# commit thousands of times a second, and a checkpoint every 200 of them (ten a second,
# each copying and fsyncing) left the gateway's core idle a third to a half of the time
# with 16 such streams, its loop's writes held up meanwhile; a stream's first event came
# 4-6 ms later than without the journal. One a second at most: within 1.5 ms of it.
CHECKPOINT_GAP = 1.0


def _busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class LoopWriter:
    """The loop thread's connection to one store file (opened on first use, in the loop's
    thread: sqlite3 connections belong to the thread that opened them)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._since_checkpoint = 0
        self._checkpointed = -CHECKPOINT_GAP  # time.monotonic() of the last one
        # Batches committed here, and those sent to the store's thread because the lock
        # was taken (read by tests/state/test_sqlite_loop.py).
        self.written = 0
        self.deferred = 0
        self.checkpoints = 0  # started (read by the tests too)
        # The checkpoints: one thread, one connection (opened there), one at a time.
        self._checkpoints = ThreadPoolExecutor(max_workers=1,
                                               thread_name_prefix="a2a-state-checkpoint")
        self._checkpoint_db: sqlite3.Connection | None = None
        self._checkpointing = False
        self._closed = False

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=0, isolation_level=None,
                             check_same_thread=False)
        try:
            db.execute("PRAGMA busy_timeout = 0")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA wal_autocheckpoint = 0")
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path} is not in WAL mode")
        except BaseException:
            db.close()
            raise
        self._db = db
        return db

    def try_write(self, write: Callable[[sqlite3.Connection], None]) -> bool:
        """Run ``write`` in a write transaction here and now: True when committed, False
        when the write lock was taken (nothing written: write it on the store's thread).
        Any other SQLite error is raised (the store reports it as a StoreError)."""
        db = self._db or self._open()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                self.deferred += 1
                return False
            raise
        try:
            write(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        self.written += 1
        self._since_checkpoint += 1
        if self._since_checkpoint >= CHECKPOINT_EVERY and not self._checkpointing:
            now = time.monotonic()
            if now < self._checkpointed + CHECKPOINT_GAP:
                return True
            self._since_checkpoint = 0
            self._checkpointed = now
            self.checkpoints += 1
            self._checkpointing = True
            self._checkpoints.submit(self._checkpoint)
        return True

    def _checkpoint(self) -> None:
        """A passive checkpoint of what this connection wrote: it never waits for a
        reader or a writer; what it cannot copy now, the next one does (those due while
        it runs are its work)."""
        try:
            if self._checkpoint_db is None:
                self._checkpoint_db = sqlite3.connect(self.path, isolation_level=None,
                                                      check_same_thread=False)
            self._checkpoint_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("SQLite checkpoint failed; retried later", path=self.path,
                        error=str(exc))
        finally:
            self._checkpointing = False

    def _close_checkpoints(self) -> None:
        db, self._checkpoint_db = self._checkpoint_db, None
        if db is not None:
            db.close()

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()
        if not self._closed:  # after the checkpoint in progress (its thread's connection)
            self._closed = True
            self._checkpoints.submit(self._close_checkpoints)
            self._checkpoints.shutdown(wait=False)
