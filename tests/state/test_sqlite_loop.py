"""The SQLite store's small writes on the loop's own connection (gateway/state/sqlite_loop.py):
written at once when the lock is free, sent to the store's thread when it is not (the loop
never waits for the lock), checkpointed on a thread of their own since the loop's connection
never checkpoints itself."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from gateway.config.state import JournalConfig
from gateway.state import TaskRecord, sqlite_loop
from gateway.state.journal import limits_of
from gateway.state.sqlite_store import SqliteStore
from tests.support.waiting import wait_until


def _record(task_id: str, updated: float = 2.0) -> TaskRecord:
    return TaskRecord("t", task_id, "c", "TASK_STATE_WORKING", 1.0, updated, None, "b")


def _rows(path: Path, *, immutable: bool = False) -> list[str]:
    """Task ids in the file; ``immutable``: in the main database file only (the WAL is not
    read), i.e. what a checkpoint has copied there."""
    uri = f"file:{path}?immutable=1" if immutable else f"file:{path}"
    db = sqlite3.connect(uri, uri=True)
    try:
        return sorted(r[0] for r in db.execute("SELECT task_id FROM tasks"))
    finally:
        db.close()


async def test_a_small_write_is_committed_on_the_loop_and_seen_by_another_connection(
        tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    try:
        await store.record_tasks([_record("a"), _record("b")])
        assert store.loop_writer is not None
        assert (store.loop_writer.written, store.loop_writer.deferred) == (1, 0)
        assert _rows(path) == ["a", "b"]  # another process's connection sees it now
        assert (await store.get_task("t", "a")) == _record("a")
    finally:
        await store.close()


async def test_a_write_while_another_holds_the_lock_goes_to_the_thread_and_the_loop_runs_on(
        tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another worker writing
        writing = asyncio.ensure_future(store.record_tasks([_record("a")]))
        for _ in range(50):  # turns of the loop: the write waits on the thread meanwhile
            await asyncio.sleep(0)
        # Not written, and not tried again on the loop: handed to the thread, whose
        # busy_timeout waits for the lock (the loop's own connection never waits).
        assert not writing.done()
        assert store.loop_writer is not None
        assert (store.loop_writer.written, store.loop_writer.deferred) == (0, 1)
        other.execute("COMMIT")
        await asyncio.wait_for(writing, 10)
        assert _rows(path) == ["a"]
        assert store.loop_writer.written == 0
    finally:
        other.close()
        await store.close()


async def test_the_loops_commits_are_checkpointed_off_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_loop, "CHECKPOINT_EVERY", 3)
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    db = sqlite3.connect(path)  # the schema into the main file: only rows stay in the WAL
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    try:
        for task_id in ("a", "b"):
            await store.record_tasks([_record(task_id)])
        await store.ping()
        assert _rows(path, immutable=True) == []  # in the WAL only: no checkpoint yet
        await store.record_tasks([_record("c")])
        await wait_until(lambda: _rows(path, immutable=True) == ["a", "b", "c"],
                         "the third commit's checkpoint copied the rows into the file")
    finally:
        await store.close()


async def test_a_large_batch_and_an_in_memory_store_stay_on_the_thread(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "state.db"))
    memory = SqliteStore()
    try:
        await store.record_tasks([_record(f"t{i}") for i in range(sqlite_loop.LOOP_ROWS + 1)])
        assert store.loop_writer is not None and store.loop_writer.written == 0
        assert memory.loop_writer is None
        await memory.record_tasks([_record("a")])
        assert (await memory.get_task("t", "a")) == _record("a")
    finally:
        await store.close()
        await memory.close()



async def test_checkpoints_are_a_gap_apart_however_many_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_loop, "CHECKPOINT_EVERY", 2)
    monkeypatch.setattr(sqlite_loop, "CHECKPOINT_GAP", 3600.0)
    store = SqliteStore(str(tmp_path / "state.db"))
    try:
        for i in range(10):
            await store.record_tasks([_record(f"t{i}")])
        assert store.loop_writer is not None
        assert (store.loop_writer.written, store.loop_writer.checkpoints) == (10, 1)
    finally:
        await store.close()


async def test_a_journal_append_of_any_size_is_written_on_the_loop(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "state.db"))
    try:
        events = [b"event %d" % i for i in range(sqlite_loop.LOOP_ROWS * 2)]
        seqs = await store.journal_append("t", "task", events, False,
                                          limits_of(JournalConfig()), None)
        assert seqs == list(range(1, len(events) + 1))
        assert store.loop_writer is not None
        assert (store.loop_writer.written, store.loop_writer.deferred) == (1, 0)
        read = await store.journal_read("t", "task", 0, len(events))
        assert [entry.data for entry in read.entries] == events
    finally:
        await store.close()
