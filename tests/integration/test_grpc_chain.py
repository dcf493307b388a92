"""gRPC backends without SDK processes: gateway B reaches the demo agent through gateway A.

    client ──(JSON-RPC or gRPC)──▶ B ──(gRPC, v1.0 or v0.3)──▶ A ──(v0.3 JSON-RPC)──▶ demo

B's tenant has `binding: GRPC` and points at A's gRPC port, so every call below goes
through B's gRPC egress and A's gRPC ingress of the given version.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb

from tests.integration.grpc_support import (
    FILE_CONTENT,
    collect,
    kinds,
    p03_send,
    rpc_error,
    v03_stub,
)
from tests.support.helpers import MakeGateway, free_port, v03

V10_HEADERS = {"A2A-Version": "1.0"}


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        reply: dict[str, Any] = await resp.json()
        return reply


async def sse(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        return [json.loads(line[5:]) async for line in resp.content if line.startswith(b"data:")]


def j03_message(text: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": f"m-{text}", "role": "user",
            "parts": [{"kind": "text", "text": text}]}


def p10_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


class Chain:
    def __init__(self, url: str, grpc_target: str, backend_version: str) -> None:
        self.url = url  # B's JSON-RPC endpoint
        self.grpc_target = grpc_target  # B's gRPC listener
        self.backend_version = backend_version  # of B's backend, gateway A


@pytest.fixture(params=["1.0", "0.3"], ids=["grpc-v10-backend", "grpc-v03-backend"])
async def chain(request: pytest.FixtureRequest, make_gateway: MakeGateway,
                demo_agent: str) -> Chain:
    a_grpc, b_grpc = free_port(), free_port()
    await make_gateway({"demo": v03(demo_agent)}, grpc_port=a_grpc)
    url = await make_gateway({"viaGrpc": v03(f"grpc://127.0.0.1:{a_grpc}", request.param,
                                             "GRPC")}, grpc_port=b_grpc)
    return Chain(url + "/", f"127.0.0.1:{b_grpc}", request.param)


async def test_send_message_and_task(http: aiohttp.ClientSession, chain: Chain) -> None:
    reply = await rpc(http, chain.url, "message/send", {"message": j03_message("hi")})
    assert reply["result"]["parts"] == [{"kind": "text", "text": "echo: hi"}]
    reply = await rpc(http, chain.url, "SendMessage", {"message": p10_message("task: x")},
                      V10_HEADERS)
    task = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    text, file, data = task["artifacts"][0]["parts"]
    assert text == {"text": "built x"}
    assert file == {"raw": "AAECYmluYXJ5", "filename": "blob.bin",
                    "mediaType": "application/octet-stream"}
    assert data == {"data": {"k": 1}}


async def test_streams_keep_order_and_final(http: aiohttp.ClientSession, chain: Chain) -> None:
    events = await sse(http, chain.url, "message/stream", {"message": j03_message("stream: 2")})
    results = [e["result"] for e in events]
    assert [r["kind"] for r in results] == ["task", "status-update", "artifact-update",
                                            "artifact-update", "status-update"]
    assert [r["final"] for r in results if r["kind"] == "status-update"] == [False, True]
    events = await sse(http, chain.url, "SendStreamingMessage",
                       {"message": p10_message("stream: 2")}, V10_HEADERS)
    assert [next(iter(e["result"])) for e in events] == [
        "task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_get_cancel_not_found_and_push(http: aiohttp.ClientSession, chain: Chain) -> None:
    reply = await rpc(http, chain.url, "SendMessage", {
        "message": p10_message("slow"), "configuration": {"returnImmediately": True}},
        V10_HEADERS)
    task_id = reply["result"]["task"]["id"]
    reply = await rpc(http, chain.url, "tasks/get", {"id": task_id, "historyLength": 1})
    assert reply["result"]["history"][0]["parts"][0]["text"] == "slow"
    cfg = {"taskId": task_id, "id": "c1", "url": "https://hooks.example/x", "token": "tok",
           "authentication": {"scheme": "Bearer", "credentials": "s"}}
    reply = await rpc(http, chain.url, "CreateTaskPushNotificationConfig", cfg, V10_HEADERS)
    assert reply["result"] == cfg
    reply = await rpc(http, chain.url, "ListTaskPushNotificationConfigs", {"taskId": task_id},
                      V10_HEADERS)
    # Toward v0.3, B relays: its seal gives the client its own config back. Toward v1.0
    # it does not, and cannot vouch for who set the copy A holds: no credentials.
    shown = cfg if chain.backend_version == "0.3" else {
        **cfg, "token": None, "authentication": {"scheme": "Bearer"}}
    assert reply["result"] == {"configs": [{k: v for k, v in shown.items() if v}]}
    reply = await rpc(http, chain.url, "DeleteTaskPushNotificationConfig",
                      {"taskId": task_id, "id": "c1"}, V10_HEADERS)
    assert reply["result"] is None
    reply = await rpc(http, chain.url, "tasks/cancel", {"id": task_id})
    assert reply["result"]["status"]["state"] == "canceled"
    reply = await rpc(http, chain.url, "GetTask", {"id": "nope"}, V10_HEADERS)
    assert reply["error"]["code"] == -32001
    assert reply["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"


async def test_grpc_client_through_grpc_backend(chain: Chain) -> None:
    async with grpc.aio.insecure_channel(chain.grpc_target) as channel:
        reply = await v03_stub(channel).SendMessage(p03_send("task: y"))
        part = reply.task.artifacts[0].parts[1]
        assert base64.b64decode(part.file.file_with_bytes) == FILE_CONTENT
        events = await collect(v03_stub(channel).SendStreamingMessage(p03_send("stream: 1")))
        assert kinds(events)[0] == "task" and events[-1].status_update.final
        err = await rpc_error(v03_stub(channel).GetTask(v03pb.GetTaskRequest(name="tasks/no")))
        assert err.details() == "TaskNotFoundError: Task not found"


async def test_list_tasks_toward_grpc_backend(http: aiohttp.ClientSession,
                                              chain: Chain) -> None:
    """Toward v0.3 gRPC, gateway B lists from its own index; toward v1.0 gRPC, B forwards
    ListTasks to gateway A, which lists from its index (its backend is v0.3)."""
    reply = await rpc(http, chain.url, "SendMessage",
                      {"message": p10_message("task: z", contextId="ctx-chain")}, V10_HEADERS)
    task_id = reply["result"]["task"]["id"]
    reply = await rpc(http, chain.url, "ListTasks", {"contextId": "ctx-chain"}, V10_HEADERS)
    assert [t["id"] for t in reply["result"]["tasks"]] == [task_id]
    assert reply["result"]["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_grpc_backend_down(http: aiohttp.ClientSession, make_gateway: MakeGateway) -> None:
    port = free_port()
    url = await make_gateway({"down": v03(f"127.0.0.1:{free_port()}", "1.0", "GRPC")},
                             grpc_port=port) + "/"
    reply = await rpc(http, url, "SendMessage", {"message": p10_message("hi")}, V10_HEADERS)
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"][0]["reason"] == "BACKEND_UNAVAILABLE"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        err = await rpc_error(v03_stub(channel).SendMessage(p03_send("hi")))
        assert err.code() == grpc.StatusCode.UNAVAILABLE


async def test_grpc_backend_timeout_passes_the_deadline_on(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, demo_agent: str) -> None:
    a_grpc = free_port()
    await make_gateway({"demo": v03(demo_agent)}, grpc_port=a_grpc)
    tenant = v03(f"127.0.0.1:{a_grpc}", "1.0", "GRPC")
    tenant["backend"]["timeout"] = 0.5
    url = await make_gateway({"slowOne": tenant}) + "/"
    # A blocking `slow` takes 30 s: B gives up after 0.5 s, and A, told the deadline,
    # stops waiting for the demo agent too.
    reply = await rpc(http, url, "SendMessage", {"message": p10_message("slow")}, V10_HEADERS)
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"][0]["reason"] == "BACKEND_TIMEOUT"
