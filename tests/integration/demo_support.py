"""Talking to the demo agent in tests: JSON-RPC calls and SSE frames (J03 shapes)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from aiohttp.test_utils import TestClient

JSON = dict[str, Any]


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


async def send_follow_up(client: TestClient[Any, Any], task: JSON, text: str) -> JSON:
    reply: JSON = await result(
        client, "message/send", {"message": user_message(text, taskId=task["id"])}
    )
    return reply
