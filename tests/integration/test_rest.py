"""HTTP+JSON ingress and egress with real servers on loopback (demo agent behind)."""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest

from tests.support.helpers import MakeGateway, v03

V10 = {"A2A-Version": "1.0"}


def msg(text: str) -> dict[str, Any]:
    return {"message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}}


async def call(http: aiohttp.ClientSession, verb: str, url: str, body: Any = None,
               headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    async with http.request(verb, url, json=body, headers=headers) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if text else None, resp.headers


@pytest.fixture
async def gw(make_gateway: MakeGateway, demo_agent: str) -> str:
    return await make_gateway({"demo": v03(demo_agent)})


@pytest.fixture
async def via_rest(make_gateway: MakeGateway, gw: str) -> str:
    """A second gateway whose backend is the first one's v1.0 REST binding."""
    return await make_gateway({"r": {"backend": {"url": gw, "version": "1.0",
                                                 "binding": "HTTP+JSON"}}})


async def test_v10_send_task_and_get(http: aiohttp.ClientSession, gw: str) -> None:
    status, body, _ = await call(http, "POST", gw + "/message:send", msg("task: r"), V10)
    assert status == 200
    task = body["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert base64.b64decode(task["artifacts"][0]["parts"][1]["raw"]) == b"\x00\x01\x02binary"
    status, got, _ = await call(http, "GET", f"{gw}/tasks/{task['id']}?historyLength=1", None, V10)
    assert status == 200 and got["id"] == task["id"] and len(got["history"]) == 1


async def test_content_type_follows_the_client(http: aiohttp.ClientSession, gw: str) -> None:
    headers = {**V10, "Content-Type": "application/a2a+json"}
    async with http.post(gw + "/message:send", data=json.dumps(msg("hi")),
                         headers=headers) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/a2a+json")
        assert (await resp.json(content_type=None))["message"]["parts"] == [{"text": "echo: hi"}]


async def test_i8_tenant_prefix_and_tenant_field_reach_the_same_tenant(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, demo_agent: str) -> None:
    url = await make_gateway({"other": v03("http://127.0.0.1:9/"), "demo": v03(demo_agent)},
                             default_tenant="other")
    status, by_path, _ = await call(http, "POST", url + "/demo/message:send", msg("hi"), V10)
    assert status == 200 and by_path["message"]["parts"] == [{"text": "echo: hi"}]
    status, by_field, _ = await call(http, "POST", url + "/message:send",
                                     {**msg("hi"), "tenant": "demo"}, V10)
    assert status == 200 and by_field["message"]["parts"] == [{"text": "echo: hi"}]


async def test_i11_rest_stream_lines_are_bare_stream_responses(http: aiohttp.ClientSession,
                                                               gw: str) -> None:
    events = []
    async with http.post(gw + "/message:stream?alt=sse", json=msg("stream: 3"),
                         headers=V10) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        async for line in resp.content:
            if line.startswith(b"data:"):
                events.append(json.loads(line[5:]))
    assert "jsonrpc" not in events[0] and "task" in events[0]
    text = "".join(e["artifactUpdate"]["artifact"]["parts"][0]["text"]
                   for e in events if "artifactUpdate" in e)
    assert text == "chunk 0chunk 1chunk 2"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_i13_unknown_fields_are_ignored(http: aiohttp.ClientSession, gw: str) -> None:
    body = msg("hi")
    body["surprise"] = {"x": 1}
    body["message"]["kind"] = "message"
    status, got, _ = await call(http, "POST", gw + "/message:send", body, V10)
    assert status == 200 and got["message"]["parts"] == [{"text": "echo: hi"}]


async def test_i2_not_found_is_404_with_error_info(http: aiohttp.ClientSession, gw: str) -> None:
    status, body, _ = await call(http, "GET", gw + "/tasks/nope", None, V10)
    assert status == 404
    assert body["error"]["status"] == "NOT_FOUND"
    info = body["error"]["details"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == ("TASK_NOT_FOUND", "a2a-protocol.org")


async def test_errors_in_the_rest_dialect(http: aiohttp.ClientSession, gw: str) -> None:
    async with http.post(gw + "/message:send", data=b"{nope", headers=V10) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["details"][0]["reason"] == "PARSE_ERROR"
    status, body, _ = await call(http, "GET", gw + "/nowhere/at/all", None, V10)
    assert status == 404 and body["error"]["details"][0]["reason"] == "METHOD_NOT_FOUND"
    # `/v1/...` and `/{tenant}/v1/...` without A2A-Version are v0.3 paths: v0.3 error body.
    for path in ("/v1/tasks", "/demo/v1/tasks"):
        status, body, _ = await call(http, "GET", gw + path)
        assert status == 404 and set(body) == {"message"}, (path, body)
    status, body, headers = await call(http, "DELETE", gw + "/message:send", None, V10)
    assert status == 405 and "POST" in headers["Allow"]
    # v0.3 backend: ListTasks from the gateway's task index; a token it did not make
    status, body, _ = await call(http, "GET", gw + "/tasks?pageToken=x", None, V10)
    assert status == 400 and body["error"]["details"][0]["reason"] == "INVALID_PARAMS"
    status, body, _ = await call(http, "GET", gw + "/tasks?pageSize=ten", None, V10)
    assert status == 400 and "pageSize" in body["error"]["message"]


async def test_rest_egress_v10(http: aiohttp.ClientSession, via_rest: str) -> None:
    # A v0.3 JSON-RPC client → gateway → v1.0 REST backend (a gateway) → v0.3 demo agent.
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "slow"}]}, "configuration": {"blocking": False}}}
    _, body, _ = await call(http, "POST", via_rest + "/", rpc)
    task_id = body["result"]["id"]
    cfg = {"taskId": task_id, "pushNotificationConfig": {
        "id": "c1", "url": "https://hooks.example/x", "token": "t",
        "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}
    for method, params, check in [
        ("tasks/pushNotificationConfig/set", cfg, lambda r: r == cfg),
        ("tasks/pushNotificationConfig/get", {"id": task_id, "pushNotificationConfigId": "c1"},
         lambda r: r == cfg),
        ("tasks/pushNotificationConfig/list", {"id": task_id}, lambda r: r == [cfg]),
        ("tasks/pushNotificationConfig/delete",
         {"id": task_id, "pushNotificationConfigId": "c1"}, lambda r: r is None),
        ("tasks/cancel", {"id": task_id}, lambda r: r["status"]["state"] == "canceled"),
        ("tasks/get", {"id": "nope"}, None),
    ]:
        _, body, _ = await call(http, "POST", via_rest + "/", {**rpc, "method": method,
                                                                "params": params})
        if check is None:
            assert body["error"]["code"] == -32001
        else:
            assert check(body["result"]), (method, body)


async def test_rest_egress_stream_and_subscribe(http: aiohttp.ClientSession,
                                                via_rest: str) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage", "params": msg("stream: 2")}
    lines = []
    async with http.post(via_rest + "/", json=body, headers=V10) as resp:
        async for line in resp.content:
            if line.startswith(b"data:"):
                lines.append(json.loads(line[5:])["result"])
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id = lines[0]["task"]["id"]
    # Subscribing to a finished task: the v0.3 demo agent sends the task and closes.
    sub = {"jsonrpc": "2.0", "id": 4, "method": "SubscribeToTask", "params": {"id": task_id}}
    async with http.post(via_rest + "/", json=sub, headers=V10) as resp:
        text = await resp.text()
    assert task_id in text
