"""The built-in demo agent, driven over HTTP exactly as a v0.3 JSON-RPC client would."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.integration.demo_support import (
    parse_sse,
    result,
    results,
    rpc,
    send,
    send_follow_up,
    stream,
    user_message,
)
from tests.support.waiting import wait_until

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
    task_id = task["id"]

    async def completed() -> dict[str, Any] | None:
        got = await result(client, "tasks/get", {"id": task_id})
        return got if got["status"]["state"] == "completed" else None

    task = await wait_until(completed, "the task completed")
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
