"""The task index is written off the call's path: what the recorder keeps, merges, drops
(on SQLite and Redis), and what a gateway records of unary answers (translated and passed
through), streams, subscriptions and relayed webhooks (with the v0.3 demo agent)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import aiohttp
import pytest

from gateway.observability.metrics import TASK_DROPS, TASK_RECORDS
from gateway.state import Store, StoreError, TaskQuery, TaskRecord
from gateway.state.sqlite_store import SqliteStore
from gateway.tasks.record import TaskRecorder
from tests.support.helpers import MakeGateway, receiving_webhooks, v03
from tests.support.waiting import wait_until

T0 = 1_700_000_000.0
V10 = {"A2A-Version": "1.0"}


def rec(task_id: str, at: float, state: str = "TASK_STATE_WORKING", *,
        owner: str | None = None, tenant: str = "t1") -> TaskRecord:
    return TaskRecord(tenant, task_id, "c1", state, at, at, owner, "JSONRPC/0.3")


# ---------------------------------------------------------------- the recorder


async def test_observations_merge_and_are_written_in_batches(store: Store) -> None:
    recorder = TaskRecorder(store, capacity=100, batch=4)
    written = TASK_RECORDS._value.get()
    # 10 tasks seen 30 times each, in one tick: 10 records, newest status kept, first owner.
    for step in range(30):
        for i in range(10):
            recorder.add(rec(f"t{i}", T0 + step, owner="alice" if step == 3 else None))
    assert len(recorder) == 10
    assert recorder.pending("t1", "t4") == TaskRecord("t1", "t4", "c1", "TASK_STATE_WORKING",
                                                      T0, T0 + 29, "alice", "JSONRPC/0.3")
    await recorder.flush()
    assert len(recorder) == 0 and recorder.pending("t1", "t4") is None
    assert TASK_RECORDS._value.get() - written == 10
    page = await store.list_tasks(TaskQuery("t1", owner="alice"))
    assert page.total_size == 10 and {r.updated_at for r in page.records} == {T0 + 29}
    # An older observation arriving late does not move a task back.
    recorder.add(rec("t0", T0 + 1, "TASK_STATE_SUBMITTED"))
    await recorder.close()
    got = await store.get_task("t1", "t0")
    assert got is not None and (got.state, got.updated_at) == ("TASK_STATE_WORKING", T0 + 29)


class Spy:
    """A store that says how the recorder writes to it (and writes)."""

    def __init__(self, store: Store) -> None:
        self.store, self.backend, self.writes = store, store.backend, list[int]()

    async def record_tasks(self, records: list[TaskRecord]) -> None:
        self.writes.append(len(records))
        await self.store.record_tasks(records)


async def test_a_trickle_is_written_in_few_batches_and_flush_does_not_linger(
        store: Store) -> None:
    spy = Spy(store)
    recorder = TaskRecorder(cast(Store, spy), linger=0.05)
    for i in range(20):  # one every 5 ms: about two lingers' worth
        recorder.add(rec(f"t{i}", T0))
        await asyncio.sleep(0.005)
    await recorder.flush()
    assert sum(spy.writes) == 20 and len(spy.writes) <= 10, spy.writes
    slow = TaskRecorder(cast(Store, spy), linger=30)
    slow.add(rec("late", T0))
    await asyncio.wait_for(slow.flush(), 5)  # a reader does not wait for the linger
    assert await store.get_task("t1", "late") is not None


async def test_a_full_queue_drops_and_counts_never_waits(store: Store) -> None:
    recorder = TaskRecorder(store, capacity=5)
    dropped = TASK_DROPS.labels("queue_full")._value.get()
    for i in range(8):
        recorder.add(rec(f"t{i}", T0))
    recorder.add(rec("t0", T0 + 1, "TASK_STATE_COMPLETED"))  # already waiting: merged
    assert TASK_DROPS.labels("queue_full")._value.get() - dropped == 3
    await recorder.flush()
    page = await store.list_tasks(TaskQuery("t1"))
    assert sorted(r.task_id for r in page.records) == ["t0", "t1", "t2", "t3", "t4"]
    assert page.records[0].state == "TASK_STATE_COMPLETED"


async def test_a_failing_store_is_counted_not_raised(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "gone.db"))
    await store.close()
    recorder = TaskRecorder(store)
    failed = TASK_DROPS.labels("store_error")._value.get()
    recorder.add(rec("a", T0))
    recorder.add(rec("b", T0))
    await recorder.flush()
    assert TASK_DROPS.labels("store_error")._value.get() - failed == 2


class Holding(Spy):
    """Writes each batch only once let go (``release``); records what each carried."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.release = asyncio.Event()
        self.batches: list[list[str]] = []

    async def record_tasks(self, records: list[TaskRecord]) -> None:
        self.batches.append([r.task_id for r in records])
        await self.release.wait()
        await super().record_tasks(records)


async def test_creations_wait_for_their_write_and_share_it(store: Store) -> None:
    """A creating call's write (read-your-writes): it returns once the store has the
    record, does not linger, and the calls waiting at one moment share one write; the
    ones waiting go first when more is queued than a batch holds."""
    spy = Spy(store)
    recorder = TaskRecorder(cast(Store, spy), batch=4, linger=30)
    for i in range(6):
        recorder.add(rec(f"bg{i}", T0))  # background observations, lingering
    await asyncio.wait_for(recorder.write([rec("mine", T0, owner="alice")]), 5)
    got = await store.get_task("t1", "mine")
    assert got is not None and got.owner == "alice"
    holding = Holding(store)
    recorder = TaskRecorder(cast(Store, holding), batch=4, linger=30)
    first = asyncio.ensure_future(recorder.write([rec("w0", T0)]))
    await wait_until(lambda: holding.batches, "the first batch being written",
                     interval=0.001)
    # While that is written, more than a batch queues up, and more callers wait: one
    # write for all of them, ahead of the queue.
    for i in range(6):
        recorder.add(rec(f"q{i}", T0))
    more = asyncio.gather(*(recorder.write([rec(f"w{i}", T0)]) for i in range(1, 4)))
    await asyncio.sleep(0.01)
    holding.release.set()
    await asyncio.wait_for(asyncio.gather(first, more), 5)
    assert holding.batches[:2] == [["w0"], ["w1", "w2", "w3", "q0"]]
    await recorder.close()


async def test_a_creation_the_store_cannot_take_is_an_error(tmp_path: Path) -> None:
    gone = SqliteStore(str(tmp_path / "gone.db"))
    await gone.close()
    recorder = TaskRecorder(gone)
    with pytest.raises(StoreError, match="closed"):
        await recorder.write([rec("a", T0)])
    assert recorder.failing
    stuck = Holding(SqliteStore(str(tmp_path / "ok.db")))
    slow = TaskRecorder(cast(Store, stuck), write_timeout=0.05)
    with pytest.raises(StoreError, match=r"not written within 0\.05 s"):
        await slow.write([rec("b", T0)])
    stuck.release.set()
    await slow.close()
    assert not slow.failing  # the write went through in the end
    await stuck.store.close()


# ---------------------------------------------------------------- through a gateway


async def eventually(store: Store, task_id: str, done: Callable[[TaskRecord], bool],
                     tenant: str = "demo") -> TaskRecord:
    async def recorded() -> TaskRecord | None:
        record = await store.get_task(tenant, task_id)
        return record if record is not None and done(record) else None

    return await wait_until(recorded, f"{task_id} recorded so")


def state_is(state: str) -> Callable[[TaskRecord], bool]:
    return lambda r: r.state == state


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        return (await resp.json())["result"]


def p10(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": os.urandom(6).hex(), "role": "ROLE_USER", "parts": [{"text": text}],
            **extra}


def j03(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "messageId": os.urandom(6).hex(), "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


@pytest.fixture
async def recorded(make_gateway: MakeGateway, demo_agent: str,
                   tmp_path: Path) -> AsyncIterator[tuple[str, Store]]:
    """A gateway in front of the v0.3 demo agent, and its SQLite file opened beside it."""
    path = str(tmp_path / "state.db")
    url = await make_gateway({"demo": v03(demo_agent)}, state={"path": path}) + "/"
    store = SqliteStore(path)
    yield url, store
    await store.close()


async def test_unary_answers_translated_and_passed_through(
        recorded: tuple[str, Store], http: aiohttp.ClientSession) -> None:
    gw, store = recorded
    translated = (await rpc(http, gw, "SendMessage", {"message": p10("task: a")}, V10))["task"]
    got = await eventually(store, translated["id"], state_is("TASK_STATE_COMPLETED"))
    assert (got.context_id, got.owner, got.backend) == (translated["contextId"], None,
                                                        "JSONRPC/0.3")
    assert got.created_at <= got.updated_at
    # v0.3 JSON-RPC client, v0.3 JSON-RPC backend: the answer is passed through as sent,
    # and read for the index by the writer.
    slow = await rpc(http, gw, "message/send", {
        "message": j03("slow"), "configuration": {"blocking": False}})
    await eventually(store, slow["id"], lambda r: r.state in ("TASK_STATE_SUBMITTED",
                                                               "TASK_STATE_WORKING"))
    canceled = await rpc(http, gw, "tasks/cancel", {"id": slow["id"]})
    assert canceled["status"]["state"] == "canceled"
    await eventually(store, slow["id"], state_is("TASK_STATE_CANCELED"))


async def sse_results(http: aiohttp.ClientSession, url: str, method: str,
                      params: Any) -> list[Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=V10) as resp:
        return [json.loads(line[5:])["result"] async for line in resp.content
                if line.startswith(b"data:")]


async def test_streams_and_subscriptions(recorded: tuple[str, Store], demo_agent: str,
                                         http: aiohttp.ClientSession) -> None:
    gw, store = recorded
    events = await sse_results(http, gw, "SendStreamingMessage", {"message": p10("stream: 2")})
    task = events[0]["task"]
    got = await eventually(store, task["id"], state_is("TASK_STATE_COMPLETED"))
    assert got.context_id == task["contextId"]
    # A task started at the agent itself, seen by the gateway only through a subscription.
    started = await rpc(http, demo_agent, "message/send", {
        "message": j03("stream: 3"), "configuration": {"blocking": False}})
    assert await store.get_task("demo", started["id"]) is None
    events = await sse_results(http, gw, "SubscribeToTask", {"id": started["id"]})
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    await eventually(store, started["id"], state_is("TASK_STATE_COMPLETED"))


async def test_relayed_webhooks(recorded: tuple[str, Store], demo_agent: str,
                                http: aiohttp.ClientSession) -> None:
    gw, store = recorded
    async with receiving_webhooks() as (hook_url, received):
        first = (await rpc(http, gw, "SendMessage", {"message": p10("input: x")}, V10))["task"]
        await rpc(http, gw, "CreateTaskPushNotificationConfig", {
            "taskId": first["id"], "id": "c1", "url": hook_url}, V10)
        await eventually(store, first["id"], state_is("TASK_STATE_INPUT_REQUIRED"))
        # The follow-up goes to the agent itself: only its webhook, relayed by the gateway
        # (v0.3 agent, v1.0 client), tells the gateway that the task completed.
        await rpc(http, demo_agent, "message/send", {"message": j03(
            "Paris", taskId=first["id"], contextId=first["contextId"])})
        body = await asyncio.wait_for(received.get(), 10)
        assert body["task"]["id"] == first["id"]
        await eventually(store, first["id"], state_is("TASK_STATE_COMPLETED"))
