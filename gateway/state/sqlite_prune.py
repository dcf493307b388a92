"""Pruning the SQLite store's task index (one transaction, on the store's thread): the
tasks past `state.retention`, the conversations and tasks they leave bound where a
migration follows them (base.KeptOwner), and the expired entries of the other tables."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from gateway.state.base import KeptOwner

# The tasks each rule drops: not updated since a time, the oldest beyond a count.
_OLD = "updated_at < ?"
_EXCESS = ("(tenant, task_id) IN (SELECT tenant, task_id FROM tasks "
           "ORDER BY updated_at, task_id LIMIT ?)")

# A binding's rule (Store.claim; sqlite_store._CLAIM writes by it too): the first
# writer's value stays until it expires; an expired one is taken over. Its last
# parameter is now.
CLAIMED = ("ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
           "expires = excluded.expires WHERE once.expires <= ?")
# The conversation of a dropped task that is its newest (so none of it is left: the rules
# drop the oldest first), bound to that task's agent (or the default): what routing read
# of the index, which follows a conversation by its newest task. And a dropped task
# itself where its agent is not the default (a task no one bound is the default's).
_KEEP = ("INSERT INTO once SELECT ? || t.context_id, COALESCE(t.agent, ?), ? FROM tasks t "
         "WHERE t.tenant = ? AND t.context_id != '' AND {dropped} AND NOT EXISTS ("
         "SELECT 1 FROM tasks n WHERE n.tenant = t.tenant AND n.context_id = t.context_id "
         "AND (n.updated_at > t.updated_at OR (n.updated_at = t.updated_at "
         "AND n.task_id > t.task_id))) " + CLAIMED)
_KEEP_TASKS = ("INSERT INTO once SELECT ? || task_id, agent, ? FROM tasks WHERE tenant = ? "
               "AND agent IS NOT NULL AND agent != ? AND {dropped} " + CLAIMED)


def prune_tasks(db: sqlite3.Connection, now: float, older_than: float | None,
                max_tasks: int, kept: Mapping[str, KeptOwner]) -> int:
    """Drop the tasks past retention (``max_tasks`` 0: no count bound); how many."""
    dropped = 0
    if older_than is not None:
        dropped += _drop(db, now, _OLD, older_than, kept)
    if max_tasks > 0:
        excess = db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] - max_tasks
        if excess > 0:
            dropped += _drop(db, now, _EXCESS, excess, kept)
    return dropped


def _drop(db: sqlite3.Connection, now: float, dropped: str, arg: float,
          kept: Mapping[str, KeptOwner]) -> int:
    keep, keep_tasks = _KEEP.format(dropped=dropped), _KEEP_TASKS.format(dropped=dropped)
    for tenant, owner in kept.items():
        expires = now + owner.ttl
        db.execute(keep, (owner.prefix, owner.value, expires, tenant, arg, now))
        if owner.tasks:
            db.execute(keep_tasks, (owner.tasks, expires, tenant, owner.value, arg, now))
    return int(db.execute(f"DELETE FROM tasks WHERE {dropped}", (arg,)).rowcount)
