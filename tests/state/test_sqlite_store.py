"""What only the SQLite store does: a file that outlives the process, shared by workers."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.state import StoreError, TaskQuery, TaskRecord
from gateway.state.sqlite_store import SqliteStore


async def test_survives_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "sub" / "state.db")
    store = SqliteStore(path)
    await store.record_task(TaskRecord("t", "a", "c", "TASK_STATE_WORKING", 1.0, 2.0, "o", "b"))
    await store.mark_spent("seal", 60)
    await store.close()
    again = SqliteStore(path)
    assert await again.get_task("t", "a") == TaskRecord("t", "a", "c", "TASK_STATE_WORKING",
                                                        1.0, 2.0, "o", "b")
    assert await again.is_spent("seal")
    await again.close()


async def test_two_workers_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    one, two = SqliteStore(path), SqliteStore(path)
    try:
        await one.record_task(TaskRecord("t", "a", "c", "TASK_STATE_WORKING", 1.0, 2.0))
        await two.record_task(TaskRecord("t", "b", "c", "TASK_STATE_WORKING", 1.0, 3.0))
        for store in (one, two):
            page = await store.list_tasks(TaskQuery("t"))
            assert [r.task_id for r in page.records] == ["b", "a"]
        results = await asyncio.gather(*(s.seen_once("n", 60) for s in [one, two] * 25))
        assert results.count(True) == 1
    finally:
        await one.close()
        await two.close()


async def test_wal_mode(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "state.db"))
    await store.ping()
    await store.close()
    assert (tmp_path / "state.db").exists()
    with pytest.raises(StoreError):
        await store.ping()


def test_unopenable_file(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StoreError):
        SqliteStore(str(tmp_path / "dir.db"))


_WORKER = """
import asyncio, json, sys
from gateway.state.sqlite_store import SqliteStore

async def main():
    store = SqliteStore(sys.argv[1])
    won = [k for k in range(40) if await store.seen_once(f"n{k}", 60)]
    taken = sum([(await store.take_tokens("b", 0.001, 30))[0] for _ in range(20)])
    await store.close()
    print(json.dumps([won, taken]))

asyncio.run(main())
"""


def test_worker_processes_share_marks_and_buckets(tmp_path: Path) -> None:
    """Three processes on one file: each mark is taken by exactly one, and the bucket's 30
    tokens are shared (60 asked for)."""
    path = str(tmp_path / "state.db")
    asyncio.run(SqliteStore(path).close())  # the schema, before the race
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, path], stdout=subprocess.PIPE,
                              env=env, text=True) for _ in range(3)]
    results = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    won = [k for r in results for k in r[0]]
    assert sorted(won) == list(range(40))
    assert sum(r[1] for r in results) == 30


_OLD_TASKS = """CREATE TABLE tasks (
  tenant TEXT NOT NULL, task_id TEXT NOT NULL, context_id TEXT NOT NULL,
  state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  owner TEXT, backend TEXT NOT NULL, PRIMARY KEY (tenant, task_id)) WITHOUT ROWID"""


async def test_a_file_from_before_the_agent_column_gains_it_and_keeps_its_tasks(
        tmp_path: Path) -> None:
    # A state file written by an older gateway: its tasks table has no `agent` column.
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute(_OLD_TASKS)
    db.execute("INSERT INTO tasks VALUES ('shop', 't-old', 'c', 'TASK_STATE_COMPLETED', "
               "1.0, 1.0, NULL, 'JSONRPC/0.3')")
    db.commit()
    db.close()
    store = SqliteStore(str(path))
    try:
        old = await store.get_task("shop", "t-old")
        assert old is not None and old.agent is None and old.backend == "JSONRPC/0.3"
        await store.record_task(TaskRecord("shop", "t-new", "c", "TASK_STATE_WORKING", 2.0,
                                           2.0, None, "JSONRPC/1.0", "candidate"))
        new = await store.get_task("shop", "t-new")
        assert new is not None and new.agent == "candidate"
    finally:
        await store.close()
    again = SqliteStore(str(path))  # opened again: the column is not added twice
    try:
        assert (await again.get_task("shop", "t-new")) == new
    finally:
        await again.close()


# Rounds of processes opening one fresh file at the same moment (a barrier). Opening
# inline, not through SqliteStore's thread: the thread's start spreads the openers out and
# hides the race. Before the opening lock, 2 processes collided in ~12 rounds of 100.
_OPENERS = """
import multiprocessing as mp, os, sys, tempfile
from gateway.state.sqlite_store import connect

def opener(path, barrier, results):
    barrier.wait()
    try:
        connect(path).close()
        results.put("ok")
    except Exception as exc:
        results.put(repr(exc))

if __name__ == "__main__":
    fork = mp.get_context("fork")
    rounds, n = int(sys.argv[1]), int(sys.argv[2])
    for r in range(rounds):
        path = os.path.join(tempfile.mkdtemp(dir=sys.argv[3]), "state.db")
        barrier, results = fork.Barrier(n), fork.Queue()
        procs = [fork.Process(target=opener, args=(path, barrier, results)) for _ in range(n)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=30) for _ in procs]
        for p in procs:
            p.join()
        print(r, *outcomes, sep="\\t", flush=True)
"""


def test_processes_opening_a_fresh_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Workers starting together on a new state file (issue 27): every one opens it, in
    100 rounds of 2 racing processes, not "database is locked" now and then."""
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", _OPENERS, "100", "2", str(tmp_path)],
                         env={**os.environ, "PYTHONPATH": root}, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    rounds = [line.split("\t") for line in out.splitlines()]
    assert len(rounds) == 100
    assert [r for r in rounds if r[1:] != ["ok", "ok"]] == []
