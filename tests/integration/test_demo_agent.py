"""The built-in demo agent, driven over HTTP exactly as a v0.3 JSON-RPC client would."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.demo_agent import build_app, start_demo_agent

JSON = dict[str, Any]


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    # Short chunk interval keeps the suite fast; `slow` keeps its real 30 s so a
    # cancel that did not work could not pass by the task finishing on its own.
    async with TestClient(TestServer(build_app(chunk_interval=0.01))) as test_client:
        yield test_client


def user_message(text: str, **extra: Any) -> JSON:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


async def rpc(client: TestClient[Any, Any], method: str, params: Any = None, rid: Any = 1) -> JSON:
    body: JSON = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    response = await client.post("/", json=body)
    assert response.status == 200
    reply: JSON = await response.json()
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == rid
    return reply


async def result(client: TestClient[Any, Any], method: str, params: Any = None) -> Any:
    reply = await rpc(client, method, params)
    assert "error" not in reply, reply
    return reply["result"]


async def send(client: TestClient[Any, Any], text: str, **config: Any) -> JSON:
    params: JSON = {"message": user_message(text)}
    if config:
        params["configuration"] = config
    reply: JSON = await result(client, "message/send", params)
    return reply


def parse_sse(raw: str) -> list[JSON]:
    events = []
    for frame in raw.split("\n\n"):
        data = [line[len("data: ") :] for line in frame.splitlines() if line.startswith("data: ")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


async def stream(
    client: TestClient[Any, Any], method: str, params: JSON, rid: Any = 7
) -> list[JSON]:
    response = await client.post(
        "/", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    )
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    frames = parse_sse(await response.text())
    for frame in frames:
        assert frame["jsonrpc"] == "2.0"
        assert frame["id"] == rid
    return frames


def results(frames: list[JSON]) -> list[JSON]:
    assert all("result" in frame for frame in frames), frames
    return [frame["result"] for frame in frames]


# --- card ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json"])
async def test_agent_card_is_v03_shape_with_own_url(
    client: TestClient[Any, Any], path: str
) -> None:
    response = await client.get(path)
    assert response.status == 200
    card = await response.json()
    assert card["name"] == "a2a-gateway demo agent"
    assert card["protocolVersion"] == "0.3.0"
    assert card["url"] == str(client.make_url("/"))
    assert card["preferredTransport"] == "JSONRPC"
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert card["supportsAuthenticatedExtendedCard"] is True
    assert card["defaultInputModes"] == card["defaultOutputModes"] == ["text/plain"]
    assert [s["id"] for s in card["skills"]] == ["echo", "task", "stream", "input", "slow"]
    assert "secret-skill" not in json.dumps(card)


async def test_extended_card_adds_secret_skill(client: TestClient[Any, Any]) -> None:
    card = await result(client, "agent/getAuthenticatedExtendedCard")
    assert card["name"] == "a2a-gateway demo agent"
    assert [s["id"] for s in card["skills"]][-1] == "secret-skill"


# --- skills ----------------------------------------------------------------------


async def test_echo_replies_with_a_message(client: TestClient[Any, Any]) -> None:
    reply = await send(client, "hello there")
    assert reply["kind"] == "message"
    assert reply["role"] == "agent"
    assert reply["parts"] == [{"kind": "text", "text": "echo: hello there"}]
    assert reply["contextId"]
    assert "taskId" not in reply


async def test_echo_over_stream_is_a_single_message(client: TestClient[Any, Any]) -> None:
    events = results(await stream(client, "message/stream", {"message": user_message("hi")}))
    assert [e["kind"] for e in events] == ["message"]
    assert events[0]["parts"][0]["text"] == "echo: hi"


async def test_task_has_text_file_and_data_parts(client: TestClient[Any, Any]) -> None:
    task = await send(client, "task: a birdhouse")
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    assert task["status"]["timestamp"].endswith("Z")
    [artifact] = task["artifacts"]
    assert artifact["artifactId"] == "result"
    assert artifact["name"] == "result"
    text, file, data = artifact["parts"]
    assert text == {"kind": "text", "text": "built a birdhouse"}
    assert file["kind"] == "file"
    assert file["file"]["name"] == "blob.bin"
    assert file["file"]["mimeType"] == "application/octet-stream"
    assert base64.b64decode(file["file"]["bytes"]) == b"\x00\x01\x02binary"
    assert data == {"kind": "data", "data": {"k": 1}}
    [user] = task["history"]
    assert user["role"] == "user"
    assert user["taskId"] == task["id"]
    assert user["contextId"] == task["contextId"]


async def test_stream_event_sequence_and_final_flag(client: TestClient[Any, Any]) -> None:
    events = results(await stream(client, "message/stream", {"message": user_message("stream: 3")}))
    assert [e["kind"] for e in events] == ["task", "status-update"] + ["artifact-update"] * 3 + [
        "status-update"
    ]
    task = events[0]
    assert task["status"]["state"] == "submitted"
    assert events[1]["status"]["state"] == "working"
    assert events[1]["final"] is False
    chunks = events[2:5]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == ["chunk 0", "chunk 1", "chunk 2"]
    assert {c["artifact"]["artifactId"] for c in chunks} == {"stream"}
    assert [c["append"] for c in chunks] == [False, True, True]
    assert [c["lastChunk"] for c in chunks] == [False, False, True]
    assert events[-1]["status"]["state"] == "completed"
    assert events[-1]["final"] is True
    for event in events[1:]:
        assert event["taskId"] == task["id"]
        assert event["contextId"] == task["contextId"]
    stored = await result(client, "tasks/get", {"id": task["id"]})
    assert stored["status"]["state"] == "completed"
    assert [p["text"] for p in stored["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1", "chunk 2"]


async def test_stream_count_and_blocking_send(client: TestClient[Any, Any]) -> None:
    task = await send(client, "stream: 5")
    assert task["status"]["state"] == "completed"
    assert len(task["artifacts"][0]["parts"]) == 5
    default = await send(client, "stream")
    assert len(default["artifacts"][0]["parts"]) == 3


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("stream: 2", 2),
        ("stream: 0", 1),
        ("stream: 5000", 100),
        ("stream: abc", 3),
        ("stream: ²", 3),
    ],
)
async def test_stream_count_is_parsed_defensively(
    client: TestClient[Any, Any], text: str, chunks: int
) -> None:
    task = await send(client, text)
    assert len(task["artifacts"][0]["parts"]) == chunks


async def test_non_blocking_send_returns_early_and_keeps_working(
    client: TestClient[Any, Any],
) -> None:
    task = await send(client, "stream: 3", blocking=False)
    assert task["status"]["state"] in ("submitted", "working")
    for _ in range(100):
        task = await result(client, "tasks/get", {"id": task["id"]})
        if task["status"]["state"] == "completed":
            break
        await asyncio.sleep(0.02)
    assert task["status"]["state"] == "completed"


async def test_multi_turn_input(client: TestClient[Any, Any]) -> None:
    task = await send(client, "input: coffee")
    assert task["status"]["state"] == "input-required"
    question = task["status"]["message"]
    assert question["role"] == "agent"
    assert question["parts"] == [{"kind": "text", "text": "From where?"}]

    follow_up = user_message("Brazil", taskId=task["id"], contextId=task["contextId"])
    done = await result(client, "message/send", {"message": follow_up})
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "completed"
    [answer] = done["artifacts"]
    assert answer["artifactId"] == "answer"
    assert answer["parts"] == [{"kind": "text", "text": "coffee from Brazil"}]
    history = done["history"]
    assert [(m["role"], m["parts"][0]["text"]) for m in history] == [
        ("user", "input: coffee"),
        ("agent", "From where?"),
        ("user", "Brazil"),
    ]

    again = await rpc(client, "message/send", {"message": user_message("x", taskId=task["id"])})
    assert again["error"]["code"] == -32602


async def test_multi_turn_over_stream(client: TestClient[Any, Any]) -> None:
    first = results(await stream(client, "message/stream", {"message": user_message("input: tea")}))
    assert first[-1]["kind"] == "status-update"
    assert first[-1]["status"]["state"] == "input-required"
    assert first[-1]["final"] is True
    task_id = first[0]["id"]
    second = results(
        await stream(client, "message/stream", {"message": user_message("India", taskId=task_id)})
    )
    assert [e["kind"] for e in second] == ["task", "artifact-update", "status-update"]
    assert second[1]["artifact"]["parts"][0]["text"] == "tea from India"
    assert second[-1]["final"] is True


async def test_get_honours_history_length(client: TestClient[Any, Any]) -> None:
    task = await send(client, "input: bread")
    await send_follow_up(client, task, "the bakery")
    full = await result(client, "tasks/get", {"id": task["id"]})
    assert len(full["history"]) == 3
    last = await result(client, "tasks/get", {"id": task["id"], "historyLength": 1})
    assert [m["parts"][0]["text"] for m in last["history"]] == ["the bakery"]
    two = await result(client, "tasks/get", {"id": task["id"], "historyLength": 2})
    assert [m["parts"][0]["text"] for m in two["history"]] == ["From where?", "the bakery"]
    # v0.3: 0 means "no limit", not "none".
    zero = await result(client, "tasks/get", {"id": task["id"], "historyLength": 0})
    assert len(zero["history"]) == 3
    bad = await rpc(client, "tasks/get", {"id": task["id"], "historyLength": -1})
    assert bad["error"]["code"] == -32602


async def send_follow_up(client: TestClient[Any, Any], task: JSON, text: str) -> JSON:
    reply: JSON = await result(
        client, "message/send", {"message": user_message(text, taskId=task["id"])}
    )
    return reply


# --- cancel and resubscribe -----------------------------------------------------


async def test_cancel_slow_task(client: TestClient[Any, Any]) -> None:
    task = await send(client, "slow", blocking=False)
    assert task["status"]["state"] in ("submitted", "working")
    canceled = await result(client, "tasks/cancel", {"id": task["id"]})
    assert canceled["status"]["state"] == "canceled"
    stored = await result(client, "tasks/get", {"id": task["id"]})
    assert stored["status"]["state"] == "canceled"
    again = await rpc(client, "tasks/cancel", {"id": task["id"]})
    assert again["error"]["code"] == -32002


async def test_cancel_ends_an_open_stream(client: TestClient[Any, Any]) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "message/stream"}
    response = await client.post("/", json={**body, "params": {"message": user_message("slow")}})
    first = json.loads((await response.content.readline()).decode()[len("data: ") :])
    task_id = first["result"]["id"]
    canceled = await result(client, "tasks/cancel", {"id": task_id})
    assert canceled["status"]["state"] == "canceled"
    rest = results(parse_sse(await asyncio.wait_for(response.text(), 5)))
    # "working" comes first unless the cancel beat the worker's first step.
    assert [e["status"]["state"] for e in rest] in (["working", "canceled"], ["canceled"])
    assert rest[-1]["kind"] == "status-update"
    assert rest[-1]["final"] is True


async def test_resubscribe_gets_task_then_live_events(client: TestClient[Any, Any]) -> None:
    task = await send(client, "slow", blocking=False)
    watcher = asyncio.create_task(stream(client, "tasks/resubscribe", {"id": task["id"]}))
    await asyncio.sleep(0.1)
    await result(client, "tasks/cancel", {"id": task["id"]})
    events = results(await asyncio.wait_for(watcher, 5))
    assert [e["kind"] for e in events] == ["task", "status-update"]
    assert events[0]["id"] == task["id"]
    assert events[1]["status"]["state"] == "canceled"
    assert events[1]["final"] is True


async def test_resubscribe_to_terminal_task_sends_only_the_task(
    client: TestClient[Any, Any],
) -> None:
    task = await send(client, "task: x")
    events = results(await stream(client, "tasks/resubscribe", {"id": task["id"]}))
    assert [e["kind"] for e in events] == ["task"]
    assert events[0]["status"]["state"] == "completed"


# --- errors ----------------------------------------------------------------------


async def test_unknown_task(client: TestClient[Any, Any]) -> None:
    for method in ("tasks/get", "tasks/cancel", "tasks/pushNotificationConfig/list"):
        reply = await rpc(client, method, {"id": "no-such-task"})
        assert reply["error"]["code"] == -32001, method
    follow_up = await rpc(
        client, "message/send", {"message": user_message("hi", taskId="no-such-task")}
    )
    assert follow_up["error"]["code"] == -32001
    frames = await stream(client, "tasks/resubscribe", {"id": "no-such-task"})
    assert [f["error"]["code"] for f in frames] == [-32001]


async def test_parse_error(client: TestClient[Any, Any]) -> None:
    for body in (b"{not json", b"\xff\xfe\x00", b"[" * 100_000):
        response = await client.post("/", data=body, headers={"Content-Type": "application/json"})
        reply = await response.json()
        assert reply == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Invalid JSON payload"},
        }


async def test_method_not_found(client: TestClient[Any, Any]) -> None:
    reply = await rpc(client, "SendMessage", {"message": user_message("hi")}, rid="abc")
    assert reply["error"]["code"] == -32601


@pytest.mark.parametrize(
    "body",
    [
        [],
        [{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}],
        "text",
        {"id": 1, "method": "tasks/get"},
        {"jsonrpc": "1.0", "id": 1, "method": "tasks/get"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "tasks/get"},
        {"jsonrpc": "2.0", "id": True, "method": "tasks/get"},
    ],
)
async def test_invalid_request(client: TestClient[Any, Any], body: Any) -> None:
    response = await client.post("/", json=body)
    reply = await response.json()
    assert reply["error"]["code"] == -32600
    assert reply["id"] in (None, 1)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("message/send", None),
        ("message/send", []),
        ("message/send", {}),
        ("message/send", {"message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}}),
        ("message/send", {"message": {"messageId": "m", "role": "robot", "parts": []}}),
        ("message/send", {"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}),
        ("message/send", {"message": user_message("x"), "configuration": {"blocking": "no"}}),
        ("message/send", {"message": user_message("x"), "configuration": {"historyLength": "2"}}),
        (
            "message/send",
            {"message": user_message("x"), "configuration": {"pushNotificationConfig": {}}},
        ),
        ("message/stream", {"message": "hello"}),
        ("tasks/get", {"id": 5}),
        ("tasks/cancel", {}),
        ("tasks/resubscribe", {"id": ""}),
        ("tasks/pushNotificationConfig/set", {"taskId": "t", "pushNotificationConfig": {}}),
        ("tasks/pushNotificationConfig/get", {"pushNotificationConfigId": "c"}),
    ],
)
async def test_invalid_params(client: TestClient[Any, Any], method: str, params: Any) -> None:
    reply = await rpc(client, method, params)
    assert reply["error"]["code"] == -32602, reply


# --- push notifications ---------------------------------------------------------


async def test_push_config_set_get_list_delete(client: TestClient[Any, Any]) -> None:
    task = await send(client, "task: x")
    tid = task["id"]
    default = await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": tid, "pushNotificationConfig": {"url": "http://127.0.0.1:9/a", "token": "t1"}},
    )
    assert default == {
        "taskId": tid,
        "pushNotificationConfig": {"url": "http://127.0.0.1:9/a", "token": "t1", "id": tid},
    }
    named = await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": tid, "pushNotificationConfig": {"id": "b", "url": "http://127.0.0.1:9/b"}},
    )
    assert named["pushNotificationConfig"]["id"] == "b"

    got_default = await result(client, "tasks/pushNotificationConfig/get", {"id": tid})
    assert got_default["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/a"
    got_named = await result(
        client, "tasks/pushNotificationConfig/get", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert got_named["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/b"

    listed = await result(client, "tasks/pushNotificationConfig/list", {"id": tid})
    assert isinstance(listed, list)
    assert sorted(c["pushNotificationConfig"]["id"] for c in listed) == sorted([tid, "b"])
    assert all(c["taskId"] == tid for c in listed)

    deleted = await rpc(
        client, "tasks/pushNotificationConfig/delete", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert "result" in deleted
    assert deleted["result"] is None
    listed = await result(client, "tasks/pushNotificationConfig/list", {"id": tid})
    assert [c["pushNotificationConfig"]["id"] for c in listed] == [tid]
    missing = await rpc(
        client, "tasks/pushNotificationConfig/get", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert missing["error"]["code"] == -32602
    unknown = await rpc(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": "nope", "pushNotificationConfig": {"url": "http://x/"}},
    )
    assert unknown["error"]["code"] == -32001


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]]]:
    """A local webhook that records every POST it gets."""
    received: asyncio.Queue[tuple[dict[str, str], JSON]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put((dict(request.headers), await request.json()))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    async with TestServer(app) as server:
        yield str(server.make_url("/hook")), received


async def next_push(
    received: asyncio.Queue[tuple[dict[str, str], JSON]], state: str
) -> tuple[dict[str, str], JSON]:
    while True:
        headers, task = await asyncio.wait_for(received.get(), 5)
        if task["status"]["state"] == state:
            return headers, task


async def test_push_delivery_with_inline_config(
    client: TestClient[Any, Any],
    receiver: tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]],
) -> None:
    url, received = receiver
    task = await send(
        client, "task: pushed", pushNotificationConfig={"url": url, "token": "secret-token"}
    )
    headers, pushed = await next_push(received, "completed")
    assert headers["X-A2A-Notification-Token"] == "secret-token"
    assert headers["Content-Type"].startswith("application/json")
    assert pushed["kind"] == "task"
    assert pushed["id"] == task["id"]
    assert pushed["artifacts"][0]["parts"][0]["text"] == "built pushed"


async def test_push_delivery_with_set_config_follows_state_changes(
    client: TestClient[Any, Any],
    receiver: tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]],
) -> None:
    url, received = receiver
    task = await send(client, "input: honey")
    await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": task["id"], "pushNotificationConfig": {"url": url}},
    )
    await send_follow_up(client, task, "the hive")
    states = []
    for _ in range(2):
        headers, pushed = await asyncio.wait_for(received.get(), 5)
        assert "X-A2A-Notification-Token" not in headers
        states.append(pushed["status"]["state"])
    assert states == ["working", "completed"]
    assert pushed["artifacts"][0]["parts"][0]["text"] == "honey from the hive"


async def test_failing_push_does_not_break_the_task(client: TestClient[Any, Any]) -> None:
    task = await send(client, "task: y", pushNotificationConfig={"url": "http://127.0.0.1:1/x"})
    assert task["status"]["state"] == "completed"
    bad_scheme = await send(client, "task: z", pushNotificationConfig={"url": "ftp://nowhere"})
    assert bad_scheme["status"]["state"] == "completed"
    assert (await send(client, "still alive"))["parts"][0]["text"] == "echo: still alive"


# --- real port and lifecycle ------------------------------------------------------


async def test_start_demo_agent_serves_and_cleans_up_promptly() -> None:
    runner = await start_demo_agent("127.0.0.1", 0)
    try:
        port = runner.addresses[0][1]
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/.well-known/agent-card.json") as response:
                assert (await response.json())["url"] == f"{base}/"
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": user_message("slow")},
            }
            # A blocking `slow` send is in flight while we shut down: cleanup must
            # end it (and the 30 s worker) instead of waiting for it.
            blocked = asyncio.create_task(session.post(f"{base}/", json=body))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await runner.cleanup()
            assert time.monotonic() - started < 2
            response = await asyncio.wait_for(blocked, 5)
            reply = await response.json()
            assert reply["result"]["status"]["state"] == "working"
    finally:
        await runner.cleanup()
