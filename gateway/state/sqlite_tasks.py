"""The SQLite store's task index table (`tasks`): its rows as the store writes them, in
batches of upserts that keep a task's first creation time, owner and agent, and the
column a file made by an older gateway gains when it is opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any

from gateway.state.base import TaskRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
  tenant TEXT NOT NULL, task_id TEXT NOT NULL, context_id TEXT NOT NULL,
  state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  owner TEXT, backend TEXT NOT NULL, agent TEXT, PRIMARY KEY (tenant, task_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_by_time ON tasks (tenant, updated_at DESC, task_id DESC);
-- Only tasks with an owner (auth on): without one, recording writes no entry here, and
-- ListTasks' `owner = ?` implies the condition, so it still uses this index.
DROP INDEX IF EXISTS tasks_by_owner;
CREATE INDEX IF NOT EXISTS tasks_by_owner_set
  ON tasks (tenant, owner, updated_at DESC, task_id DESC) WHERE owner IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_context
  ON tasks (tenant, context_id, updated_at DESC, task_id DESC);
-- No index by age across tenants: each index is one more B-tree write per recorded
-- task on the call's hot path, and only pruning (every few minutes, on this store's own
-- thread) reads by age; it scans.
DROP INDEX IF EXISTS tasks_by_age;
"""

# What a read selects, in TaskRecord's order.
COLUMNS = "tenant, task_id, context_id, state, created_at, updated_at, owner, backend, agent"


def add_agent_column(db: sqlite3.Connection) -> None:
    """Give a table made before tasks recorded their migration agent its `agent` column
    (last, as a new table has it). Called while the file's opening lock is held."""
    names = {row[1] for row in db.execute("PRAGMA table_info(tasks)")}
    if "agent" not in names:
        db.execute("ALTER TABLE tasks ADD COLUMN agent TEXT")


# A newer status replaces the row; an older one (a late webhook) only fills a missing
# owner or agent.
_ON_CONFLICT = """
ON CONFLICT (tenant, task_id) DO UPDATE SET
  context_id = CASE WHEN excluded.updated_at >= updated_at
                    THEN excluded.context_id ELSE context_id END,
  state = CASE WHEN excluded.updated_at >= updated_at THEN excluded.state ELSE state END,
  backend = CASE WHEN excluded.updated_at >= updated_at
                 THEN excluded.backend ELSE backend END,
  updated_at = MAX(updated_at, excluded.updated_at),
  owner = COALESCE(owner, excluded.owner),
  agent = COALESCE(agent, excluded.agent)
"""


def _upsert(row: str, rows: int = 1) -> str:
    return (f"INSERT INTO tasks ({COLUMNS}) VALUES " + ", ".join([row] * rows)
            + _ON_CONFLICT)


def _row(owner: bool, agent: bool) -> str:
    """A row's values; an owner or agent the record lacks is NULL in the statement (the
    sqlite3 module binds None through its adapter lookup, which costs a tenth of the
    row's whole write, and nearly every row lacks both: authentication off, no
    migration)."""
    return (f"(?, ?, ?, ?, ?, ?, {'?' if owner else 'NULL'}, ?, "
            f"{'?' if agent else 'NULL'})")


# The statement of a row, by (has an owner, has an agent).
_UPSERTS = {(owner, agent): _upsert(_row(owner, agent))
            for owner in (False, True) for agent in (False, True)}

# Rows written _CHUNK to a statement: each execution of a statement opens a cursor on the
# table and each index, and per row that cost an eighth of the row's whole write
# (callgrind, 70-row batches: 39.5k -> 34.5k instructions a row). The rest of a batch
# goes row by row; every statement stays in the connection's statement cache.
_CHUNK = 32
_CHUNKED = {statement: _upsert(_row(owner, agent), _CHUNK)
            for (owner, agent), statement in _UPSERTS.items()}

Runs = list[tuple[str, list[tuple[Any, ...]]]]


def task_runs(records: Sequence[TaskRecord]) -> Runs:
    """``records`` as runs of rows of one statement each, in their order (a record of a
    task must still come after an earlier one of the same task)."""
    runs: Runs = []
    rows: list[tuple[Any, ...]] = []
    for r in records:
        owner, agent = r.owner, r.agent
        statement = _UPSERTS[owner is not None, agent is not None]
        row: tuple[Any, ...]
        if owner is None:
            row = ((r.tenant, r.task_id, r.context_id, r.state, r.created_at, r.updated_at,
                    r.backend) if agent is None else
                   (r.tenant, r.task_id, r.context_id, r.state, r.created_at, r.updated_at,
                    r.backend, agent))
        else:
            row = ((r.tenant, r.task_id, r.context_id, r.state, r.created_at, r.updated_at,
                    owner, r.backend) if agent is None else
                   (r.tenant, r.task_id, r.context_id, r.state, r.created_at, r.updated_at,
                    owner, r.backend, agent))
        if not runs or runs[-1][0] is not statement:
            rows = []
            runs.append((statement, rows))
        rows.append(row)
    return runs


def write_runs(db: sqlite3.Connection, runs: Runs) -> None:
    """Write what :func:`task_runs` made (inside the caller's transaction)."""
    for statement, rows in runs:
        whole = len(rows) - len(rows) % _CHUNK
        for start in range(0, whole, _CHUNK):
            db.execute(_CHUNKED[statement], list(chain.from_iterable(rows[start:start + _CHUNK])))
        if whole < len(rows):
            db.executemany(statement, rows[whole:])
