"""Task ownership (README "State"): with authentication on, a principal sees and acts on
only the tasks it created; everything else is TaskNotFound, in the caller's dialect.

Through a real gateway with API keys in front of the v0.3 demo agent, and on the index
itself with principals put on the call directly."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any, cast

import aiohttp
import pytest
from a2a.types import a2a_pb2 as pb

from gateway.auth.principal import Principal
from gateway.call import Call, CallContext, ClientFacts
from gateway.config.models import parse_config
from gateway.state import Store, TaskRecord
from gateway.tasks.index import TaskIndex, task_of
from tests.support.helpers import MakeGateway, v03
from translators import operations as ops
from translators.errors import A2AError, a2a_error

V10 = {"A2A-Version": "1.0"}
KEYS = {"alice": "k-alice-0123456789", "bob": "k-bob-0123456789"}


def auth() -> dict[str, Any]:
    return {"required": True, "api_keys": {"keys": [
        {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
        for p, k in KEYS.items()]}}


class Caller:
    def __init__(self, http: aiohttp.ClientSession, base: str, who: str) -> None:
        self.http, self.base, self.key = http, base, KEYS[who]

    async def rpc(self, method: str, params: Any, version: str = "1.0") -> Any:
        headers = {"x-api-key": self.key, **(V10 if version == "1.0" else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        async with self.http.post(self.base + "/", json=body, headers=headers) as resp:
            return await resp.json()

    async def rest(self, verb: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"x-api-key": self.key, **V10}
        async with self.http.request(verb, self.base + path, json=body,
                                     headers=headers) as resp:
            return resp.status, await resp.json()

    async def task(self, text: str, context_id: str = "") -> dict[str, Any]:
        message = {"messageId": os.urandom(6).hex(), "role": "ROLE_USER",
                   "parts": [{"text": text}], "contextId": context_id or os.urandom(6).hex()}
        reply = await self.rpc("SendMessage", {"message": message})
        return reply["result"]["task"]  # type: ignore[no-any-return]


def not_found(reply: dict[str, Any]) -> bool:
    return reply.get("error", {}).get("code") == -32001


@pytest.fixture
async def gateway(make_gateway: MakeGateway, demo_agent: str) -> str:
    return await make_gateway({"demo": v03(demo_agent),
                               "shared": {**v03(demo_agent), "task_ownership": False}},
                              auth=auth(), default_tenant="demo")


async def test_a_principal_reaches_only_its_own_tasks(gateway: str, demo_agent: str,
                                                      http: aiohttp.ClientSession) -> None:
    alice, bob = Caller(http, gateway, "alice"), Caller(http, gateway, "bob")
    ctx = os.urandom(6).hex()
    mine = await alice.task("task: a", ctx)
    theirs = await bob.task("task: b", ctx)
    slow = await alice.task("input: x", ctx)
    tid = mine["id"]
    assert (await alice.rpc("GetTask", {"id": tid}))["result"]["id"] == tid
    # Everything bob tries on alice's task: as if it did not exist.
    for method, params in [
            ("GetTask", {"id": tid}), ("CancelTask", {"id": slow["id"]}),
            ("CreateTaskPushNotificationConfig", {"taskId": tid, "id": "c",
                                                  "url": "http://127.0.0.1:9/h"}),
            ("GetTaskPushNotificationConfig", {"taskId": tid, "id": "c"}),
            ("ListTaskPushNotificationConfigs", {"taskId": tid}),
            ("DeleteTaskPushNotificationConfig", {"taskId": tid, "id": "c"}),
            ("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER",
                                         "taskId": slow["id"], "parts": [{"text": "hi"}]}})]:
        reply = await bob.rpc(method, params)
        assert not_found(reply), (method, reply)
        assert "alice" not in str(reply)  # nothing says whose it is
    assert not_found(await bob.rpc("tasks/get", {"id": tid}, version="0.3"))  # passed through
    status, body = await bob.rest("POST", f"/tasks/{slow['id']}:subscribe")
    assert status == 404 and body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    # alice's task is untouched: still waiting for input, cancellable by alice only.
    assert (await alice.rpc("GetTask", {"id": slow["id"]}))["result"]["status"]["state"] \
        == "TASK_STATE_INPUT_REQUIRED"
    # ListTasks lists the caller's own tasks, also toward a v0.3 agent.
    listed = (await alice.rpc("ListTasks", {"contextId": ctx}))["result"]
    assert sorted(t["id"] for t in listed["tasks"]) == sorted([tid, slow["id"]])
    assert listed["totalSize"] == 2
    listed = (await bob.rpc("ListTasks", {"contextId": ctx}))["result"]
    assert [t["id"] for t in listed["tasks"]] == [theirs["id"]]
    # A task created before the gateway saw it (at the agent itself) has no owner: nobody
    # reaches it while ownership is on.
    async with http.post(demo_agent, json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                           "params": {"message": {
                                               "kind": "message", "messageId": "d",
                                               "role": "user", "parts": [
                                                   {"kind": "text", "text": "task: d"}]}}}
                         ) as resp:
        direct = (await resp.json())["result"]["id"]
    assert not_found(await alice.rpc("GetTask", {"id": direct}))
    assert (await alice.rpc("CancelTask", {"id": slow["id"]}))["result"]["status"]["state"] \
        == "TASK_STATE_CANCELED"


async def test_ownership_off_for_a_tenant_that_shares_tasks(
        gateway: str, http: aiohttp.ClientSession) -> None:
    alice, bob = Caller(http, gateway + "/shared", "alice"), Caller(http, gateway + "/shared",
                                                                   "bob")
    ctx = os.urandom(6).hex()
    task = await alice.task("task: shared", ctx)
    assert (await bob.rpc("GetTask", {"id": task["id"]}))["result"]["id"] == task["id"]
    await bob.task("task: shared too", ctx)
    listed = (await bob.rpc("ListTasks", {"contextId": ctx}))["result"]
    assert listed["totalSize"] == 2


# ---------------------------------------------------------------- the index alone


def call(op: str, request: Any, who: str | None, tenant: str = "t") -> Call:
    ctx = CallContext(ClientFacts("JSONRPC"), "1.0", tenant=tenant)
    ctx.principal = None if who is None else Principal(who, "api_key")
    return Call(ops.BY_NAME[op], request, ctx)


def index(store: Store, **tenant: Any) -> TaskIndex:
    config = parse_config({"tenants": {"t": {**v03("http://127.0.0.1:9/"), **tenant}},
                           "state": {"path": ":memory:"}})
    return TaskIndex(config, store)


def test_every_request_on_a_task_names_it() -> None:
    named = [(ops.GET_TASK, pb.GetTaskRequest(id="a1")), (ops.CANCEL, pb.CancelTaskRequest(id="a1")),
             (ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id="a1")),
             (ops.PUSH_CREATE, pb.TaskPushNotificationConfig(task_id="a1")),
             (ops.PUSH_GET, pb.GetTaskPushNotificationConfigRequest(task_id="a1")),
             (ops.PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest(task_id="a1")),
             (ops.PUSH_DELETE, pb.DeleteTaskPushNotificationConfigRequest(task_id="a1")),
             (ops.SEND, pb.SendMessageRequest(message=pb.Message(task_id="a1"))),
             (ops.STREAM, pb.SendMessageRequest(message=pb.Message(task_id="a1")))]
    assert [task_of(call(op, request, None)) for op, request in named] == ["a1"] * len(named)
    for op, request in [(ops.SEND, pb.SendMessageRequest()), (ops.LIST_TASKS, pb.ListTasksRequest()),
                        (ops.EXTENDED_CARD, pb.GetExtendedAgentCardRequest())]:
        assert task_of(call(op, request, None)) == ""


async def test_owner_rules_on_the_index(store: Store) -> None:
    tasks = index(store)
    await store.record_task(TaskRecord("t", "a1", "c", "TASK_STATE_WORKING", 1.0, 1.0,
                                       "api_key:alice"))
    await store.record_task(TaskRecord("t", "nobody", "c", "TASK_STATE_WORKING", 1.0, 1.0))
    for op, request in [(ops.GET_TASK, pb.GetTaskRequest(id="a1")),
                        (ops.CANCEL, pb.CancelTaskRequest(id="a1")),
                        (ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id="a1")),
                        (ops.PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest(task_id="a1")),
                        (ops.SEND, pb.SendMessageRequest(message=pb.Message(task_id="a1")))]:
        assert task_of(call(op, request, None)) == "a1"
        await tasks.admit(call(op, request, "alice"))
        await tasks.admit(call(op, request, None))  # no principal: no ownership
        with pytest.raises(A2AError) as refused:
            await tasks.admit(call(op, request, "bob"))
        assert refused.value.kind.name == "TaskNotFoundError"
    with pytest.raises(A2AError):  # recorded without an owner: nobody's
        await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="nobody"), "alice"))
    with pytest.raises(A2AError):  # never seen
        await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="new"), "alice"))
    # A new task (no task id) and the card need no owner.
    await tasks.admit(call(ops.SEND, pb.SendMessageRequest(message=pb.Message()), "bob"))
    await tasks.admit(call(ops.EXTENDED_CARD, pb.GetExtendedAgentCardRequest(), "bob"))
    # A created task is in the store, with its owner, before its creator is answered.
    created = call(ops.SEND, pb.SendMessageRequest(), "carol")
    created.ctx.outcome.backend_binding, created.ctx.outcome.backend_version = "JSONRPC", "0.3"
    written = tasks.answered(created, pb.SendMessageResponse(task=pb.Task(
        id="c1", context_id="c", status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED))))
    assert written is not None
    await written
    got = await store.get_task("t", "c1")
    assert got is not None and got.owner == "api_key:carol"
    await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="c1"), "carol"))
    with pytest.raises(A2AError):
        await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="c1"), "dave"))
    await tasks.close()
    # ListTasks: scoped to the owner, and served from the index for every backend.
    listing = call(ops.LIST_TASKS, pb.ListTasksRequest(), "alice")
    assert tasks.owner_scope(listing) == "api_key:alice" and tasks.lists(listing, "1.0")
    assert not tasks.lists(call(ops.LIST_TASKS, pb.ListTasksRequest(), None), "1.0")


async def test_ownership_off(store: Store) -> None:
    tasks = index(store, task_ownership=False)  # this tenant
    await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id="x"), "bob"))
    assert tasks.owner_scope(call(ops.LIST_TASKS, pb.ListTasksRequest(), "bob")) is None
    config = parse_config({"tenants": {"t": v03("http://127.0.0.1:9/")},
                           "state": {"path": ":memory:", "tasks": {"ownership": False}}})
    await TaskIndex(config, store).admit(call(ops.GET_TASK, pb.GetTaskRequest(id="x"), "bob"))


class CountingStore:
    """A real store, with the calls made to it counted by method (what the ownership
    check does is compared by its work, not by a stopwatch)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await attr(*args, **kwargs)
        return counted


async def test_no_existence_oracle_in_the_ownership_check(store: Store) -> None:
    """Another principal's task, a task without an owner and a task that does not exist:
    the same error (but for the id asked for) after the same store work — one read, no
    wait for a write — so neither content nor time tells which ids exist (issue 27: the
    missing one took ~113 ms, re-read after a sleep, the other's ~2 ms)."""
    counting = CountingStore(store)
    tasks = index(cast(Store, counting))
    await store.record_task(TaskRecord("t", "theirs", "c", "TASK_STATE_WORKING", 1.0, 1.0,
                                       "api_key:alice"))
    await store.record_task(TaskRecord("t", "ownerless", "c", "TASK_STATE_WORKING", 1.0, 1.0))
    seen = []
    for task_id in ("theirs", "ownerless", "missing"):
        counting.calls.clear()
        with pytest.raises(A2AError) as refused:
            await tasks.admit(call(ops.GET_TASK, pb.GetTaskRequest(id=task_id), "bob"))
        err = refused.value
        seen.append((err.kind.name, err.message.replace(task_id, "ID"),
                     {k: v.replace(task_id, "ID") for k, v in err.metadata.items()},
                     dict(counting.calls)))
    assert seen == [("TaskNotFoundError", "task 'ID' not found", {"task_id": "ID"},
                     {"get_task": 1})] * 3
    await tasks.close()


async def test_anothers_task_and_no_task_get_the_same_answer(
        gateway: str, http: aiohttp.ClientSession) -> None:
    alice, bob = Caller(http, gateway, "alice"), Caller(http, gateway, "bob")
    theirs = (await alice.task("input: mine"))["id"]
    missing = "0" * len(theirs)
    replies = [await bob.rpc("GetTask", {"id": task}) for task in (theirs, missing)]
    assert json.dumps(replies[0]).replace(theirs, "ID") == \
        json.dumps(replies[1]).replace(missing, "ID")
    assert not_found(replies[0])
    rest = [await bob.rest("GET", f"/tasks/{task}") for task in (theirs, missing)]
    assert rest[0][0] == rest[1][0] == 404
    assert json.dumps(rest[0][1]).replace(theirs, "ID") == \
        json.dumps(rest[1][1]).replace(missing, "ID")


async def test_a_stream_shows_its_task_only_once_it_is_written(store: Store) -> None:
    """SendStreamingMessage: the first event that shows the task is written (with its
    owner) before the batch goes on; what follows it is left to be read in turns; an
    event that cannot be read ends the batch after the ones before it."""
    tasks = index(store)
    streaming = call(ops.STREAM, pb.SendMessageRequest(), "carol")
    streaming.ctx.outcome.backend_binding, streaming.ctx.outcome.backend_version = \
        "JSONRPC", "0.3"
    assert tasks.creates(streaming)
    hello = pb.StreamResponse(message=pb.Message(message_id="m", role=pb.ROLE_AGENT))
    events = [hello, pb.StreamResponse(task=pb.Task(
        id="s1", context_id="c", status=pb.TaskStatus(state=pb.TASK_STATE_WORKING))),
        pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id="s1", context_id="c", status=pb.TaskStatus(
                state=pb.TASK_STATE_COMPLETED)))]
    read: list[pb.StreamResponse] = []

    def reading() -> Iterator[pb.StreamResponse]:
        for event in events:
            read.append(event)
            yield event

    batch, written = await tasks.written_first(streaming, reading())
    assert written and read == events[:2]
    got = await store.get_task("t", "s1")
    assert got is not None and got.owner == "api_key:carol"
    assert got.state == "TASK_STATE_WORKING"
    assert list(batch) == events

    def broken() -> Iterator[pb.StreamResponse]:
        yield hello
        raise a2a_error("InvalidAgentResponseError", "unreadable")

    batch, written = await tasks.written_first(streaming, broken())
    sent: list[pb.StreamResponse] = []
    with pytest.raises(A2AError, match="unreadable"):
        sent.extend(batch)
    assert not written and sent == [hello]
    await tasks.close()
