"""The gateway end to end over JSON-RPC with real servers on loopback.

Backends: the built-in v0.3 demo agent, and — for a v1.0 JSON-RPC backend without
leaving the process — a second gateway that serves the demo agent in v1.0.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest

from gateway.ingress.common import UNDECODED
from tests.support.helpers import MakeGateway, v03
from translators.loss import FIRST_ATTEMPT, LossReport

V10_HEADERS = {"A2A-Version": "1.0"}


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any = None,
              headers: dict[str, str] | None = None, rid: Any = 1) -> tuple[dict[str, Any], Any]:
    body = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    async with http.post(url, json=body, headers=headers) as resp:
        assert resp.status == 200
        return await resp.json(), resp.headers


async def sse(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    events = []
    async with http.post(url, json=body, headers=headers) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        async for line in resp.content:
            if line.startswith(b"data:"):
                events.append(json.loads(line[5:]))
    return events


def j03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "messageId": f"m-{text}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


def p10_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


@pytest.fixture
async def gw(make_gateway: MakeGateway, demo_agent: str) -> str:
    """A gateway whose default tenant is the v0.3 demo agent."""
    return await make_gateway({"demo": v03(demo_agent)}) + "/"


@pytest.fixture
async def chained(make_gateway: MakeGateway, demo_agent: str) -> str:
    """Gateway B → (v1.0 JSON-RPC) → gateway A → (v0.3) → demo agent."""
    inner = await make_gateway({"demo": v03(demo_agent)})
    return await make_gateway({"viaV10": v03(inner + "/", "1.0")}) + "/"


async def test_v03_client_echo(http: aiohttp.ClientSession, gw: str) -> None:
    reply, _ = await rpc(http, gw, "message/send", {"message": j03_message("hi")})
    assert reply["result"]["kind"] == "message"
    assert reply["result"]["parts"] == [{"kind": "text", "text": "echo: hi"}]


async def test_v10_client_echo_and_task(http: aiohttp.ClientSession, gw: str) -> None:
    reply, _ = await rpc(http, gw, "SendMessage", {"message": p10_message("hi")}, V10_HEADERS)
    assert reply["result"] == {"message": reply["result"]["message"]}
    assert reply["result"]["message"]["role"] == "ROLE_AGENT"
    assert reply["result"]["message"]["parts"] == [{"text": "echo: hi"}]
    reply, _ = await rpc(http, gw, "SendMessage", {"message": p10_message("task: x")},
                         V10_HEADERS)
    task = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    parts = task["artifacts"][0]["parts"]
    assert parts[0] == {"text": "built x"}
    assert base64.b64decode(parts[1]["raw"]) == b"\x00\x01\x02binary"
    assert parts[1]["filename"] == "blob.bin"
    assert parts[2]["data"] == {"k": 1}
    assert "kind" not in json.dumps(task)


@pytest.mark.parametrize("client", ["0.3", "1.0"])
async def test_chained_v10_backend(http: aiohttp.ClientSession, chained: str,
                                   client: str) -> None:
    if client == "0.3":
        reply, _ = await rpc(http, chained, "message/send", {"message": j03_message("task: c")})
        task = reply["result"]
        assert task["kind"] == "task" and task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"][1]["file"]["bytes"] == base64.b64encode(
            b"\x00\x01\x02binary").decode()
    else:
        reply, _ = await rpc(http, chained, "SendMessage", {"message": p10_message("task: c")},
                             V10_HEADERS)
        assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_v10_stream_from_v03_backend(http: aiohttp.ClientSession, gw: str) -> None:
    events = await sse(http, gw, "SendStreamingMessage", {"message": p10_message("stream: 3")},
                       V10_HEADERS)
    results = [e["result"] for e in events]
    assert all(e["id"] == 7 for e in events)
    assert "task" in results[0]
    chunks = [r["artifactUpdate"]["artifact"]["parts"][0]["text"]
              for r in results if "artifactUpdate" in r]
    assert "".join(chunks) == "chunk 0chunk 1chunk 2"
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all("final" not in json.dumps(r) for r in results)


async def test_v03_stream_final_flag_via_v10_backend(http: aiohttp.ClientSession,
                                                     chained: str) -> None:
    events = await sse(http, chained, "message/stream", {"message": j03_message("stream: 2")})
    results = [e["result"] for e in events]
    statuses = [r for r in results if r["kind"] == "status-update"]
    assert statuses[-1]["status"]["state"] == "completed" and statuses[-1]["final"] is True
    assert all(s["final"] is False for s in statuses[:-1])


async def test_get_cancel_and_not_found(http: aiohttp.ClientSession, gw: str) -> None:
    reply, _ = await rpc(http, gw, "SendMessage", {
        "message": p10_message("slow"), "configuration": {"returnImmediately": True}},
        V10_HEADERS)
    task_id = reply["result"]["task"]["id"]
    reply, _ = await rpc(http, gw, "CancelTask", {"id": task_id}, V10_HEADERS)
    assert reply["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    reply, _ = await rpc(http, gw, "tasks/get", {"id": task_id})
    assert reply["result"]["status"]["state"] == "canceled"
    reply, _ = await rpc(http, gw, "GetTask", {"id": "nope"}, V10_HEADERS)
    assert reply["error"]["code"] == -32001
    assert reply["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"
    assert reply["error"]["data"][0]["domain"] == "a2a-protocol.org"
    reply, _ = await rpc(http, gw, "tasks/get", {"id": "nope"})
    assert reply["error"]["code"] == -32001


async def test_history_length_zero_strips_history_for_v10(http: aiohttp.ClientSession,
                                                          gw: str) -> None:
    reply, _ = await rpc(http, gw, "SendMessage", {"message": p10_message("task: h")},
                         V10_HEADERS)
    task_id = reply["result"]["task"]["id"]
    reply, _ = await rpc(http, gw, "GetTask", {"id": task_id}, V10_HEADERS)
    assert reply["result"]["history"]
    reply, _ = await rpc(http, gw, "GetTask", {"id": task_id, "historyLength": 0}, V10_HEADERS)
    assert "history" not in reply["result"]


async def test_push_config_semantics_v10_to_v03(http: aiohttp.ClientSession, gw: str) -> None:
    reply, _ = await rpc(http, gw, "SendMessage", {
        "message": p10_message("slow"), "configuration": {"returnImmediately": True}},
        V10_HEADERS)
    task_id = reply["result"]["task"]["id"]
    cfg = {"taskId": task_id, "id": "c1", "url": "https://hooks.example/x", "token": "tok",
           "authentication": {"scheme": "Bearer", "credentials": "s"}}
    reply, _ = await rpc(http, gw, "CreateTaskPushNotificationConfig", cfg, V10_HEADERS)
    assert reply["result"] == cfg
    reply, _ = await rpc(http, gw, "GetTaskPushNotificationConfig",
                         {"taskId": task_id, "id": "c1"}, V10_HEADERS)
    assert reply["result"] == cfg
    reply, _ = await rpc(http, gw, "ListTaskPushNotificationConfigs", {"taskId": task_id},
                         V10_HEADERS)
    assert reply["result"] == {"configs": [cfg]}
    reply, _ = await rpc(http, gw, "DeleteTaskPushNotificationConfig",
                         {"taskId": task_id, "id": "c1"}, V10_HEADERS)
    assert reply["result"] is None
    reply, _ = await rpc(http, gw, "tasks/pushNotificationConfig/list", {"id": task_id})
    assert reply["result"] == []
    await rpc(http, gw, "CancelTask", {"id": task_id}, V10_HEADERS)


async def test_list_tasks_against_v03_backend_from_the_index(http: aiohttp.ClientSession,
                                                              gw: str) -> None:
    """v0.3 has no ListTasks: the gateway answers it from the tasks it has seen."""
    sent = []
    for text in ("task: a", "task: b"):
        reply, _ = await rpc(http, gw, "SendMessage",
                             {"message": p10_message(text, contextId="ctx-list")}, V10_HEADERS)
        sent.append(reply["result"]["task"]["id"])
    await rpc(http, gw, "SendMessage", {"message": p10_message("task: other")}, V10_HEADERS)
    reply, _ = await rpc(http, gw, "ListTasks", {"contextId": "ctx-list"}, V10_HEADERS)
    result = reply["result"]
    assert sorted(t["id"] for t in result["tasks"]) == sorted(sent)
    assert {t["status"]["state"] for t in result["tasks"]} == {"TASK_STATE_COMPLETED"}
    assert all("artifacts" not in t for t in result["tasks"])
    assert (result["totalSize"], result["pageSize"], result["nextPageToken"]) == (2, 50, "")
    reply, _ = await rpc(http, gw, "ListTasks", {"contextId": "ctx-list", "pageSize": 1,
                                                 "includeArtifacts": True}, V10_HEADERS)
    first = reply["result"]
    assert first["tasks"][0]["artifacts"][0]["parts"][0]["text"] in ("built a", "built b")
    reply, _ = await rpc(http, gw, "ListTasks", {"contextId": "ctx-list", "pageSize": 1,
                                                 "pageToken": first["nextPageToken"]},
                         V10_HEADERS)
    assert {first["tasks"][0]["id"], reply["result"]["tasks"][0]["id"]} == set(sent)
    assert reply["result"]["nextPageToken"] == ""
    reply, _ = await rpc(http, gw, "ListTasks", {"pageToken": "nope"}, V10_HEADERS)
    assert reply["error"]["code"] == -32602


async def test_loss_is_reported_in_header(http: aiohttp.ClientSession, chained: str) -> None:
    # v0.3 client → v1.0 backend: GetTask cannot carry metadata (reference §3.10).
    reply, _ = await rpc(http, chained, "message/send", {"message": j03_message("task: l")})
    task_id = reply["result"]["id"]
    reply, headers = await rpc(http, chained, "tasks/get", {"id": task_id, "metadata": {"a": 1}})
    assert reply["result"]["id"] == task_id
    assert headers["A2A-Gateway-Dropped"] == "params.metadata"


async def test_loss_policy_reject(http: aiohttp.ClientSession, make_gateway: MakeGateway,
                                  demo_agent: str) -> None:
    # Translated (a same-dialect backend gets the client's own bytes, metadata and all:
    # tests/integration/test_pass_through.py).
    tenant = {"backend": {**v03(demo_agent)["backend"], "pass_through": False}}
    url = await make_gateway({"demo": tenant}, loss_policy="reject") + "/"
    reply, _ = await rpc(http, url, "tasks/get", {"id": "t", "metadata": {"a": 1}})
    assert reply["error"]["code"] == -32602
    assert "params.metadata" in reply["error"]["message"]


@pytest.mark.parametrize(("body", "code"), [
    (b"{not json", -32700),
    (b"[]", -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"tasks/get"}', -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"nope/nope"}', -32601),
    (b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":[1]}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"x"}}}',
     -32602),
])
async def test_bad_input_gets_jsonrpc_error(http: aiohttp.ClientSession, gw: str, body: bytes,
                                            code: int) -> None:
    async with http.post(gw, data=body, headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 200
        assert "A2A-Gateway-Dropped" not in resp.headers
        reply = await resp.json()
    assert reply["error"]["code"] == code
    # The one report every request not decoded yet shares was only read.
    assert LossReport(attempt=FIRST_ATTEMPT) == UNDECODED


async def test_unknown_version_and_strict_mode(http: aiohttp.ClientSession, gw: str,
                                               make_gateway: MakeGateway,
                                               demo_agent: str) -> None:
    reply, _ = await rpc(http, gw, "SendMessage", {"message": p10_message("hi")},
                         {"A2A-Version": "0.5"})
    assert reply["error"]["code"] == -32009
    assert reply["error"]["message"] == \
        "Protocol version 0.5 is not supported. Supported: 1.0, 0.3"
    assert reply["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    reply, _ = await rpc(http, gw + "?A2A-Version=1.0.1", "SendMessage",
                         {"message": p10_message("hi")})
    assert reply["result"]["message"]["parts"] == [{"text": "echo: hi"}]
    # Lenient by default: a v1.0 method without the header is served...
    reply, _ = await rpc(http, gw, "SendMessage", {"message": p10_message("hi")})
    assert "result" in reply
    # ...and refused in strict mode.
    strict = await make_gateway({"demo": v03(demo_agent)}, strict_versions=True) + "/"
    reply, _ = await rpc(http, strict, "SendMessage", {"message": p10_message("hi")})
    assert reply["error"]["code"] == -32009


async def test_unknown_tenant(http: aiohttp.ClientSession, gw: str) -> None:
    reply, _ = await rpc(http, gw + "elsewhere", "tasks/get", {"id": "t"})
    assert reply["error"]["code"] == -32602
    assert "elsewhere" in reply["error"]["message"]


async def test_backend_down(http: aiohttp.ClientSession, make_gateway: MakeGateway) -> None:
    from tests.support.helpers import free_port

    url = await make_gateway({"down": v03(f"http://127.0.0.1:{free_port()}/")}) + "/"
    reply, _ = await rpc(http, url, "SendMessage", {"message": p10_message("hi")}, V10_HEADERS)
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"][0]["reason"] == "BACKEND_UNAVAILABLE"
    reply, _ = await rpc(http, url, "message/send", {"message": j03_message("hi")})
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"]["reason"] == "BACKEND_UNAVAILABLE"


async def test_backend_garbage_and_timeout(http: aiohttp.ClientSession,
                                           make_gateway: MakeGateway) -> None:
    import asyncio

    from aiohttp import web

    from tests.support.helpers import free_port

    async def garbage(request: web.Request) -> web.Response:
        if request.query.get("status") == "502":  # a proxy's page: the backend is not there
            return web.Response(text="<html>Bad Gateway</html>", status=502,
                                content_type="text/html")
        return web.Response(text="<html>oops</html>", content_type="text/html")

    async def wrong_shape(request: web.Request) -> web.Response:
        return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task"}})

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/garbage", garbage)
    app.router.add_post("/shape", wrong_shape)
    app.router.add_post("/slow", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    base = f"http://127.0.0.1:{port}"
    try:
        url = await make_gateway({
            "garbage": v03(base + "/garbage"), "shape": {"backend": {**v03(base + "/shape")["backend"], "pass_through": False}},
            "slow": {"backend": {**v03(base + "/slow")["backend"], "timeout": 0.3}},
        })
        reply, _ = await rpc(http, url + "/garbage", "message/send",
                             {"message": j03_message("hi")})
        assert reply["error"]["code"] == -32006
        proxied = await make_gateway({"p": v03(base + "/garbage?status=502")})
        reply, _ = await rpc(http, proxied + "/p", "message/send", {"message": j03_message("hi")})
        assert (reply["error"]["code"], reply["error"]["data"]["reason"]) == (
            -32603, "BACKEND_UNAVAILABLE")
        reply, _ = await rpc(http, url + "/shape", "message/send", {"message": j03_message("x")})
        assert reply["error"]["code"] == -32006
        reply, _ = await rpc(http, url + "/slow", "SendMessage", {"message": p10_message("x")},
                             V10_HEADERS)
        assert reply["error"]["data"][0]["reason"] == "BACKEND_TIMEOUT"
    finally:
        await runner.cleanup()


async def test_history_length_zero_applies_to_streamed_tasks(http: aiohttp.ClientSession,
                                                              gw: str) -> None:
    events = await sse(http, gw, "SendStreamingMessage",
                       {"message": p10_message("stream: 1"), "configuration": {"historyLength": 0}},
                       V10_HEADERS)
    tasks = [e["result"]["task"] for e in events if "task" in e["result"]]
    assert tasks and all("history" not in t for t in tasks)
    events = await sse(http, gw, "SendStreamingMessage", {"message": p10_message("stream: 1")},
                       V10_HEADERS)
    assert events[0]["result"]["task"]["history"]  # without the limit the history is there
