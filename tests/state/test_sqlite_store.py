"""What only the SQLite store does: a file that outlives the process, shared by workers."""

from __future__ import annotations

import asyncio
import json
import os
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
