"""The demo agent with `--protocol 1.0`, driven over HTTP as a raw v1.0 JSON-RPC client:
v1.0 method names, `{"task": ...}` results, `TASK_STATE_*` enums, `{"text": ...}` parts,
`statusUpdate` / `artifactUpdate` stream events, ErrorInfo errors, A2A-Version."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from gateway.demo.agent import build_app
from tests.integration.demo_support import parse_sse

JSON = dict[str, Any]
V10 = {"A2A-Version": "1.0"}
BLOB_B64 = "AAECYmluYXJ5"  # base64 of b"\x00\x01\x02binary"


@pytest.fixture
async def agent() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    async with TestClient(TestServer(build_app(protocol="1.0", chunk_interval=0.01))) as client:
        yield client


def message(text: str, **extra: Any) -> JSON:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}],
            **extra}


async def rpc(agent: TestClient[Any, Any], method: str, params: JSON, *, rid: Any = 1,
              headers: dict[str, str] | None = None) -> JSON:
    response = await agent.post("/", json={"jsonrpc": "2.0", "id": rid, "method": method,
                                           "params": params},
                                headers=V10 if headers is None else headers)
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/json")
    reply: JSON = await response.json()
    assert (reply["jsonrpc"], reply["id"]) == ("2.0", rid)
    return reply


async def result(agent: TestClient[Any, Any], method: str, params: JSON) -> Any:
    reply = await rpc(agent, method, params)
    assert "error" not in reply, reply
    return reply["result"]


async def open_stream(agent: TestClient[Any, Any], method: str,
                      params: JSON) -> ClientResponse:
    """A stream whose headers arrived: the agent is subscribed to its task by then."""
    response = await agent.post("/", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                           "params": params}, headers=V10)
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return response


async def read_events(response: ClientResponse) -> list[JSON]:
    frames = parse_sse(await response.text())
    assert all((f["jsonrpc"], f["id"]) == ("2.0", 7) and "result" in f for f in frames), frames
    return [frame["result"] for frame in frames]


async def stream(agent: TestClient[Any, Any], method: str, params: JSON) -> list[JSON]:
    return await read_events(await open_stream(agent, method, params))


def reason(reply: JSON) -> tuple[int, str]:
    """A v1.0 error's code and its ErrorInfo reason."""
    error = reply["error"]
    [info] = error["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    return error["code"], info["reason"]


# --- the card and the version -------------------------------------------------------


async def test_card_is_a_v10_card(agent: TestClient[Any, Any]) -> None:
    response = await agent.get("/.well-known/agent-card.json")
    card = await response.json()
    assert card["supportedInterfaces"] == [{"url": str(agent.make_url("/")),
                                            "protocolBinding": "JSONRPC",
                                            "protocolVersion": "1.0"}]
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True,
                                    "extendedAgentCard": True}
    assert card["name"] == "a2a-gateway demo agent"
    assert [s["id"] for s in card["skills"]] == ["echo", "task", "stream", "input", "slow"]
    # Nothing of the v0.3 card's shape.
    for key in ("url", "protocolVersion", "preferredTransport",
                "supportsAuthenticatedExtendedCard"):
        assert key not in card
    # The v0.2 card name is a v0.3 agent's; this one does not serve it.
    assert (await agent.get("/.well-known/agent.json")).status == 404


async def test_extended_card_is_v10_too(agent: TestClient[Any, Any]) -> None:
    card = await result(agent, "GetExtendedAgentCard", {})
    assert [s["id"] for s in card["skills"]][-1] == "secret-skill"
    assert card["supportedInterfaces"][0]["protocolVersion"] == "1.0"


async def test_a2a_version_is_required(agent: TestClient[Any, Any]) -> None:
    # Missing means 0.3 (spec §3.6.2), which this agent does not serve.
    refused = await rpc(agent, "SendMessage", {"message": message("hi")}, headers={})
    assert reason(refused) == (-32009, "VERSION_NOT_SUPPORTED")
    assert refused["error"]["data"][0]["metadata"] == {"requested": "0.3", "supported": "1.0"}
    # The query parameter counts as the header (§3.6.1); a patch number is ignored.
    response = await agent.post("/?A2A-Version=1.0", json={
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("q")}})
    assert (await response.json())["result"]["message"]["parts"] == [{"text": "echo: q"}]
    patch = await rpc(agent, "SendMessage", {"message": message("p")},
                      headers={"A2A-Version": "1.0.1"})
    assert patch["result"]["message"]["parts"] == [{"text": "echo: p"}]


async def test_v03_methods_are_refused(agent: TestClient[Any, Any]) -> None:
    reply = await rpc(agent, "message/send", {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}})
    # Refused in the shape its caller reads: v0.3's (flat data).
    assert reply["error"]["code"] == -32009
    assert reply["error"]["data"] == {"requested": "0.3", "supported": "1.0"}


# --- answers ----------------------------------------------------------------------


async def test_echo_is_a_v10_message(agent: TestClient[Any, Any]) -> None:
    answer = await result(agent, "SendMessage", {"message": message("hello")})
    assert list(answer) == ["message"]
    reply = answer["message"]
    assert reply["role"] == "ROLE_AGENT"
    assert reply["parts"] == [{"text": "echo: hello"}]
    assert reply["contextId"] and "kind" not in reply


async def test_task_is_a_v10_task(agent: TestClient[Any, Any]) -> None:
    answer = await result(agent, "SendMessage", {"message": message("task: a kite")})
    assert list(answer) == ["task"]
    task = answer["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["timestamp"].endswith("Z")
    assert task["artifacts"] == [{
        "artifactId": "result", "name": "result",
        "parts": [{"text": "built a kite"},
                  {"raw": BLOB_B64, "filename": "blob.bin",
                   "mediaType": "application/octet-stream"},
                  {"data": {"k": 1}}]}]
    assert task["history"][0]["role"] == "ROLE_USER"
    assert task["history"][0]["parts"] == [{"text": "task: a kite"}]
    assert '"kind"' not in json.dumps(task)


async def test_stream_is_v10_events(agent: TestClient[Any, Any]) -> None:
    events = await stream(agent, "SendStreamingMessage", {"message": message("stream: 3")})
    assert [next(iter(e)) for e in events] == [
        "task", "statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate",
        "statusUpdate"]
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    # v1.0 has no `final`: the stream just ends.
    assert all("final" not in e.get("statusUpdate", {}) for e in events)
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [
        [{"text": "chunk 0"}], [{"text": "chunk 1"}], [{"text": "chunk 2"}]]
    # Proto3 leaves false out: the first chunk carries no `append`, the last `lastChunk`.
    assert [(c.get("append", False), c.get("lastChunk", False)) for c in chunks] == [
        (False, False), (True, False), (True, True)]


async def test_multi_turn(agent: TestClient[Any, Any]) -> None:
    asked = (await result(agent, "SendMessage", {"message": message("input: tea")}))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked["status"]["message"]["role"] == "ROLE_AGENT"
    assert asked["status"]["message"]["parts"] == [{"text": "From where?"}]
    done = (await result(agent, "SendMessage", {"message": message(
        "China", taskId=asked["id"], contextId=asked["contextId"])}))["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"] == [{"text": "tea from China"}]


async def test_get_task_and_history_length(agent: TestClient[Any, Any]) -> None:
    task = (await result(agent, "SendMessage", {"message": message("task: t")}))["task"]
    got = await result(agent, "GetTask", {"id": task["id"]})
    assert got["id"] == task["id"] and got["artifacts"] == task["artifacts"]
    assert [m["parts"] for m in got["history"]] == [[{"text": "task: t"}]]
    # v1.0's 0 is "no history" (v0.3 has no way to say it; the translator's rule applies).
    assert "history" not in await result(agent, "GetTask", {"id": task["id"],
                                                            "historyLength": 0})


async def test_task_not_found_is_a_v10_error(agent: TestClient[Any, Any]) -> None:
    reply = await rpc(agent, "GetTask", {"id": "no-such-task"})
    assert reason(reply) == (-32001, "TASK_NOT_FOUND")
    assert reply["error"]["data"][0]["metadata"] == {"taskId": "no-such-task"}


async def test_cancel_and_subscribe(agent: TestClient[Any, Any]) -> None:
    slow = (await result(agent, "SendMessage", {"message": message("slow"),
                                                "configuration": {"returnImmediately": True}}))
    task_id = slow["task"]["id"]
    subscribed = await open_stream(agent, "SubscribeToTask", {"id": task_id})
    canceled = await result(agent, "CancelTask", {"id": task_id})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    events = await asyncio.wait_for(read_events(subscribed), 5)
    # SubscribeToTask starts with the Task (spec §3.1.6) and ends with the cancel.
    assert "task" in events[0]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    # A finished task has nothing to subscribe to: v1.0 refuses (v0.3 sent the snapshot).
    refused = await rpc(agent, "SubscribeToTask", {"id": task_id})
    assert reason(refused) == (-32004, "UNSUPPORTED_OPERATION")
    again = await rpc(agent, "CancelTask", {"id": task_id})
    assert reason(again) == (-32002, "TASK_NOT_CANCELABLE")


# --- ListTasks (v1.0 only) --------------------------------------------------------------


async def test_list_tasks_filters_and_pages(agent: TestClient[Any, Any]) -> None:
    context = str(uuid.uuid4())
    ids = []
    for name in ("a", "b", "c"):
        sent = await result(agent, "SendMessage",
                            {"message": message(f"task: {name}", contextId=context)})
        ids.append(sent["task"]["id"])
    await result(agent, "SendMessage", {"message": message("task: elsewhere")})

    listed = await result(agent, "ListTasks", {"contextId": context})
    order = [t["id"] for t in listed["tasks"]]
    assert sorted(order) == sorted(ids)
    # Newest status first (two tasks finished in the same millisecond may come either way).
    stamps = [datetime.fromisoformat(t["status"]["timestamp"]) for t in listed["tasks"]]
    assert stamps == sorted(stamps, reverse=True)
    assert (listed["totalSize"], listed["pageSize"], listed["nextPageToken"]) == (3, 50, "")
    # Artifacts only when asked for (spec §3.1.4).
    assert all("artifacts" not in t for t in listed["tasks"])
    full = await result(agent, "ListTasks", {"contextId": context, "includeArtifacts": True})
    assert {t["artifacts"][0]["parts"][0]["text"] for t in full["tasks"]} == {
        "built a", "built b", "built c"}

    pages, token = [], ""
    while True:
        page = await result(agent, "ListTasks", {"contextId": context, "pageSize": 2,
                                                 "pageToken": token})
        pages.append([t["id"] for t in page["tasks"]])
        assert page["totalSize"] == 3
        token = page["nextPageToken"]
        if not token:
            break
    # The same order, in pages of two: nothing repeated, nothing skipped.
    assert pages == [order[:2], order[2:]]

    none_working = await result(agent, "ListTasks", {"contextId": context,
                                                     "status": "TASK_STATE_WORKING"})
    assert (none_working.get("tasks", []), none_working["totalSize"]) == ([], 0)
    bad = await rpc(agent, "ListTasks", {"pageToken": "not-ours"})
    assert reason(bad)[0] == -32602
    too_big = await rpc(agent, "ListTasks", {"pageSize": 101})
    assert reason(too_big)[0] == -32602


# --- push notifications -------------------------------------------------------------


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]]]:
    received: asyncio.Queue[tuple[dict[str, str], JSON]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put((dict(request.headers), json.loads(await request.read())))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    async with TestServer(app) as server:
        yield str(server.make_url("/hook")), received


async def test_push_config_crud_in_v10_shapes(agent: TestClient[Any, Any]) -> None:
    task = (await result(agent, "SendMessage", {"message": message("task: p")}))["task"]
    config = {"taskId": task["id"], "id": "cfg1", "url": "http://127.0.0.1:9/hook",
              "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "sekret"}}
    assert await result(agent, "CreateTaskPushNotificationConfig", config) == config
    assert await result(agent, "GetTaskPushNotificationConfig",
                        {"taskId": task["id"], "id": "cfg1"}) == config
    assert await result(agent, "ListTaskPushNotificationConfigs",
                        {"taskId": task["id"]}) == {"configs": [config]}
    assert await result(agent, "DeleteTaskPushNotificationConfig",
                        {"taskId": task["id"], "id": "cfg1"}) is None
    assert await result(agent, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}) == {}


async def test_push_delivery_is_v10(
        agent: TestClient[Any, Any],
        receiver: tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]]) -> None:
    url, received = receiver
    asked = (await result(agent, "SendMessage", {"message": message("input: honey")}))["task"]
    await result(agent, "CreateTaskPushNotificationConfig", {
        "taskId": asked["id"], "url": url, "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "sekret"}})
    await result(agent, "SendMessage", {"message": message("the hive", taskId=asked["id"])})
    bodies = []
    for _ in range(2):
        headers, body = await asyncio.wait_for(received.get(), 5)
        assert headers["Content-Type"] == "application/a2a+json"
        assert headers["Authorization"] == "Bearer sekret"
        assert headers["X-A2A-Notification-Token"] == "tok-1"
        bodies.append(body)
    # A StreamResponse holding the Task (spec@v1.0.1 §4.3.3), at each state change.
    assert [list(b) for b in bodies] == [["task"], ["task"]]
    assert [b["task"]["status"]["state"] for b in bodies] == [
        "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert bodies[-1]["task"]["artifacts"][0]["parts"] == [{"text": "honey from the hive"}]
