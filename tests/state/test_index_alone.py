"""The task index of a gateway that is alone on its store (one process on SQLite): a
creation is answered without waiting for its write, readers of the process flush first,
and records the store refused are kept and written later — never dropped (README "State",
"Read your writes")."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.config.models import parse_config
from gateway.state import Store, StoreError, TaskRecord
from gateway.state.sqlite_store import SqliteStore
from gateway.tasks.index import TaskIndex
from tests.state.test_ownership import call
from tests.support.helpers import v03
from translators import operations as ops
from translators.errors import A2AError


def alone(store: Store, **tasks: Any) -> TaskIndex:
    config = parse_config({"tenants": {"t": v03("http://127.0.0.1:9/")},
                           "state": {"path": ":memory:", "tasks": tasks}})
    return TaskIndex(config, store, shared=False)


def created(index: TaskIndex, task_id: str, who: str) -> Any:
    """What the index does with a SendMessage of ``who`` answered with task ``task_id``."""
    sent = call(ops.SEND, pb.SendMessageRequest(), who)
    sent.ctx.outcome.backend_binding, sent.ctx.outcome.backend_version = "JSONRPC", "0.3"
    return index.answered(sent, pb.SendMessageResponse(task=pb.Task(
        id=task_id, context_id="c", status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED))))


async def test_alone_a_creation_goes_on_at_once_and_is_read_back_by_its_owner(
        tmp_path: Any) -> None:
    store = SqliteStore(str(tmp_path / "state.db"))
    index = alone(store, linger=60)  # the writer would wait a minute for company
    try:
        assert created(index, "t1", "carol") is None  # nothing to wait for
        assert await store.get_task("t", "t1") is None  # not written yet
        # Its owner's next call reads it: the read flushes first.
        await index.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="t1"), "carol"))
        written = await store.get_task("t", "t1")
        assert written is not None and written.owner == "api_key:carol"
        # A stream's creation is not held up either.
        assert not index.creates(call(ops.STREAM, pb.SendMessageRequest(), "carol"))
    finally:
        await index.close()
        await store.close()


class RefusingStore:
    """A real SQLite store that refuses the first ``refusals`` batch writes."""

    def __init__(self, store: SqliteStore, refusals: int) -> None:
        self.store, self.refusals, self.batches = store, refusals, 0

    async def record_tasks(self, records: list[TaskRecord]) -> None:
        self.batches += 1
        if self.refusals:
            self.refusals -= 1
            raise StoreError("disk I/O error")
        await self.store.record_tasks(records)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_alone_records_the_store_refused_are_kept_and_written_later(
        tmp_path: Any) -> None:
    real = SqliteStore(str(tmp_path / "state.db"))
    store = RefusingStore(real, refusals=2)
    index = alone(store, linger=0)  # type: ignore[arg-type]
    try:
        assert created(index, "t2", "carol") is None
        assert index.recorder is not None
        await index.recorder.flush()  # two refusals, backing off, then the write
        assert store.batches == 3 and not index.recorder.failing
        written = await real.get_task("t", "t2")
        assert written is not None and written.owner == "api_key:carol"
    finally:
        await index.close()
        await real.close()


async def test_alone_a_store_that_stays_down_is_unavailable_to_readers(
        tmp_path: Any) -> None:
    real = SqliteStore(str(tmp_path / "state.db"))
    store = RefusingStore(real, refusals=1_000)
    index = alone(store, linger=0, write_timeout=0.3)  # type: ignore[arg-type]
    try:
        assert created(index, "t3", "carol") is None
        with pytest.raises(A2AError) as refused:
            await index.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="t3"), "carol"))
        assert refused.value.kind.name == "StoreUnavailableError"
        # The record is still kept: nothing was dropped.
        assert index.recorder is not None and index.recorder.pending("t", "t3") is not None
    finally:
        store.refusals = 0  # back: close() writes what was kept
        await index.close()
        written = await real.get_task("t", "t3")
        assert written is not None and written.owner == "api_key:carol"
        await real.close()


async def test_alone_wait_for_writes_always_waits_as_workers_do(tmp_path: Any) -> None:
    store = SqliteStore(str(tmp_path / "state.db"))
    index = alone(store, wait_for_writes="always")
    try:
        written = created(index, "t4", "carol")
        assert written is not None  # the call waits for its record
        await written
        got = await store.get_task("t", "t4")
        assert got is not None and got.owner == "api_key:carol"
        assert index.creates(call(ops.STREAM, pb.SendMessageRequest(), "carol"))
    finally:
        await index.close()
        await store.close()


async def test_alone_a_creation_just_before_a_reload_is_read_back_after_it(
        tmp_path: Any) -> None:
    # A call still open on the config before a reload created the task (answered at
    # once, its record kept for the writer); its owner's next call, on the new config,
    # reads it back: the new config's reads flush the old one's records too.
    store = SqliteStore(str(tmp_path / "state.db"))
    before = alone(store, linger=60)
    after = TaskIndex(parse_config({"tenants": {"t": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:", "tasks": {"linger": 60}}}),
                      store, shared=False, previous=before)
    try:
        assert created(before, "t1", "carol") is None
        await after.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="t1"), "carol"))
        written = await store.get_task("t", "t1")
        assert written is not None and written.owner == "api_key:carol"
        await before.close()  # its calls over: no longer asked, nor kept
        await after.flush()
        assert after._earlier == []
    finally:
        await after.close()
        await store.close()
