"""The stream journal in the SQLite store (the contract: gateway/state/journal.py). Plain
functions of a connection, which the store runs on its own thread: :func:`append` inside
the store's BEGIN IMMEDIATE transaction (several worker processes share the file, and
the write lock is what keeps a task's seqs dense and a writer's matches exact between
them), :func:`read` in a read transaction of its own (one consistent view of head and
entries).

``journal`` holds the entries with the digest of their bytes; digests repeat (an agent
may send the same event twice), and the index by (task, digest, seq) finds the first
entry after a writer's position with the same bytes. ``journal_heads`` holds one row a
task: the next seq, the bytes its entries hold, whether an append said the task was
terminal, and when the journal expires. The entries held are always one dense run of seqs ending at
next_seq - 1: trimming drops only the oldest."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from gateway.state.journal import JournalEntry, JournalLimits, JournalRead, JournalSize
from gateway.state.journal_common import event_digest, held_first

SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
  tenant TEXT NOT NULL, task_id TEXT NOT NULL, seq INTEGER NOT NULL, digest BLOB NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (tenant, task_id, seq)) WITHOUT ROWID;
-- The index was unique per (task, digest) before equal bytes could be two entries; a
-- file made then gets the new one in its place. (A new name: the same one would be
-- dropped and built again at every open.)
DROP INDEX IF EXISTS journal_by_digest;
CREATE INDEX IF NOT EXISTS journal_by_digest_seq ON journal (tenant, task_id, digest, seq);
CREATE TABLE IF NOT EXISTS journal_heads (
  tenant TEXT NOT NULL, task_id TEXT NOT NULL, next_seq INTEGER NOT NULL,
  bytes INTEGER NOT NULL, terminal INTEGER NOT NULL, expires_at REAL NOT NULL,
  PRIMARY KEY (tenant, task_id)) WITHOUT ROWID;
-- Pruning looks for expired journals by this; no other read does.
CREATE INDEX IF NOT EXISTS journal_heads_by_expiry ON journal_heads (expires_at);
"""

_TASK = "tenant = ? AND task_id = ?"

_INSERT = "INSERT INTO journal VALUES (?, ?, ?, ?, ?)"
_MATCH = (f"SELECT seq FROM journal WHERE {_TASK} AND digest = ? AND seq > ? "
          "ORDER BY seq LIMIT 1")


def _forget(db: sqlite3.Connection, key: tuple[str, str]) -> None:
    db.execute(f"DELETE FROM journal WHERE {_TASK}", key)
    db.execute(f"DELETE FROM journal_heads WHERE {_TASK}", key)


def append(db: sqlite3.Connection, tenant: str, task_id: str, events: Sequence[bytes],
           terminal: bool, limits: JournalLimits, after: int | None,
           now: float) -> list[int]:
    """JournalStore.journal_append, inside the caller's write transaction."""
    key = (tenant, task_id)
    head = db.execute(f"SELECT next_seq, bytes, terminal, expires_at FROM journal_heads "
                      f"WHERE {_TASK}", key).fetchone()
    if head is not None and head[3] <= now:
        # Expired, not yet pruned: reads already treat it as absent, so it starts over
        # at seq 1 (as a Redis journal does once its keys expire).
        _forget(db, key)
        head = None
    next_seq, held, ended = (1, 0, False) if head is None else (head[0], head[1], head[2])
    position = next_seq - 1 if after is None else after
    if position >= next_seq - 1:
        # A writer at the end (one stream alone, or the one ahead) has nothing to match,
        # and each insert keeps it there: all its events go in one executemany (one
        # statement step each, not one Python-level execute each).
        rows = [(*key, next_seq + i, event_digest(data), data)
                for i, data in enumerate(events)]
        db.executemany(_INSERT, rows)
        next_seq += len(rows)
        held += sum(len(data) for data in events)
        return _close(db, key, next_seq, held, ended, terminal, limits, now,
                      [row[2] for row in rows])
    seqs: list[int] = []
    for data in events:
        digest = event_digest(data)
        # Behind the end: a lookup first; the first miss puts the writer at the end.
        found = None if position >= next_seq - 1 else db.execute(
            _MATCH, (*key, digest, position)).fetchone()
        if found is None:
            db.execute(_INSERT, (*key, next_seq, digest, data))
            position = next_seq
            next_seq += 1
            held += len(data)
        else:
            position = found[0]
        seqs.append(position)
    return _close(db, key, next_seq, held, ended, terminal, limits, now, seqs)


def _close(db: sqlite3.Connection, key: tuple[str, str], next_seq: int, held: int,
           ended: bool, terminal: bool, limits: JournalLimits, now: float,
           seqs: list[int]) -> list[int]:
    """An append's end: the bounds kept, the head written; returns ``seqs``."""
    held = _trim(db, key, next_seq, held, limits)
    ended = bool(ended) or terminal  # a terminal task stays so
    expires_at = now + (limits.ttl if ended else limits.idle_ttl)
    db.execute("INSERT OR REPLACE INTO journal_heads VALUES (?, ?, ?, ?, ?, ?)",
               (*key, next_seq, held, int(ended), expires_at))
    return seqs


def _trim(db: sqlite3.Connection, key: tuple[str, str], next_seq: int, held: int,
          limits: JournalLimits) -> int:
    """Drop the oldest entries beyond the bounds; returns the bytes left."""
    first = db.execute(f"SELECT MIN(seq) FROM journal WHERE {_TASK}", key).fetchone()[0]
    count = 0 if first is None else next_seq - first
    if count <= limits.max_events and held <= limits.max_bytes:
        return held
    cut = 0
    # Oldest first, read lazily: a full journal trims one or two entries an append.
    rows = db.execute(f"SELECT seq, length(data) FROM journal WHERE {_TASK} ORDER BY seq",
                      key)
    try:
        for seq, size in rows:
            if count <= limits.max_events and held <= limits.max_bytes:
                break
            count, held, cut = count - 1, held - size, seq
    finally:
        rows.close()
    db.execute(f"DELETE FROM journal WHERE {_TASK} AND seq <= ?", (*key, cut))
    return held


def read(db: sqlite3.Connection, tenant: str, task_id: str, after: int, limit: int,
         now: float) -> JournalRead:
    """JournalStore.journal_read, in a read transaction of its own."""
    key = (tenant, task_id)
    db.execute("BEGIN")
    try:
        head = db.execute(f"SELECT next_seq, terminal FROM journal_heads WHERE {_TASK} "
                          "AND expires_at > ?", (*key, now)).fetchone()
        if head is None:
            return JournalRead([], 0, 0, False)
        first = db.execute(f"SELECT MIN(seq) FROM journal WHERE {_TASK}", key).fetchone()[0]
        # LIMIT: SQLite reads a negative one as "no limit".
        rows = db.execute(f"SELECT seq, data FROM journal WHERE {_TASK} AND seq > ? "
                          "ORDER BY seq LIMIT ?", (*key, after, max(0, limit))).fetchall()
    finally:
        db.execute("COMMIT")
    last = head[0] - 1
    return JournalRead([JournalEntry(seq, data) for seq, data in rows],
                       held_first(first, last), last, bool(head[1]))


def prune(db: sqlite3.Connection, now: float) -> None:
    """Delete the expired journals, inside the caller's write transaction."""
    expired = db.execute("SELECT tenant, task_id FROM journal_heads WHERE expires_at <= ?",
                         (now,)).fetchall()
    db.executemany(f"DELETE FROM journal WHERE {_TASK}", expired)
    db.execute("DELETE FROM journal_heads WHERE expires_at <= ?", (now,))


def size(db: sqlite3.Connection, now: float) -> JournalSize:
    """What the unexpired journals hold: from their heads, and the oldest seq of each
    (one index lookup a journal, not a scan of the entries)."""
    row = db.execute(
        "SELECT COALESCE(SUM(h.next_seq - (SELECT MIN(seq) FROM journal j WHERE j.tenant = "
        "h.tenant AND j.task_id = h.task_id)), 0), COALESCE(SUM(h.bytes), 0) "
        "FROM journal_heads h WHERE h.expires_at > ?", (now,)).fetchone()
    return JournalSize(int(row[0]), int(row[1]))
