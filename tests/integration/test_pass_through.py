"""Same-dialect pass-through: a backend that speaks the client's dialect gets the
client's own bytes and its answer comes back as it was sent, so nothing both sides can
carry is lost; what the gateway must change (push configs, tenant fields) is translated.

Each backend here records what it received and answers with a fixed document holding a
field no A2A version defines: a decode/re-encode would drop it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
from aiohttp import web

from tests.support.helpers import MakeGateway, free_port, serving

TASK = {"id": "t-1", "contextId": "c-1", "kind": "task",
        "status": {"state": "completed"}, "x-unknown": {"kept": True}}


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes]] = []


async def _http_backend(answer: Any, recorder: Recorder) -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        if "/.well-known/" in request.path:
            return web.Response(status=404)  # no card: the gateway goes by its config
        recorder.seen.append((request.method, request.path_qs, body))
        document = answer(json.loads(body) if body else None)
        return web.json_response(text=json.dumps(document))

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handle)
    async with serving(app) as base:
        yield base


@pytest.fixture
async def jsonrpc_backend() -> AsyncIterator[tuple[str, Recorder]]:
    recorder = Recorder()
    async for url in _http_backend(
            lambda doc: {"jsonrpc": "2.0", "id": doc["id"], "result": TASK}, recorder):
        yield url + "/", recorder


@pytest.fixture
async def rest_backend() -> AsyncIterator[tuple[str, Recorder]]:
    recorder = Recorder()
    async for url in _http_backend(lambda _doc: TASK, recorder):
        yield url, recorder


def _tenant(url: str, binding: str = "JSONRPC", **extra: Any) -> dict[str, Any]:
    return {"backend": {"url": url, "version": "0.3", "binding": binding, **extra}}


async def test_jsonrpc_document_and_answer_pass_as_sent(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        jsonrpc_backend: tuple[str, Recorder]) -> None:
    url, recorder = jsonrpc_backend
    gateway = await make_gateway({"t": _tenant(url)}) + "/"
    # metadata on tasks/get: v0.3 carries it, the canonical v1.0 GetTask cannot.
    sent = (b'{"jsonrpc": "2.0", "id": "abc", "method": "tasks/get", '
            b'"params": {"id": "t-1", "metadata": {"a": 1}}}')
    async with http.post(gateway, data=sent,
                         headers={"Content-Type": "application/json"}) as resp:
        answer = await resp.json()
        assert "A2A-Gateway-Dropped" not in resp.headers
    assert recorder.seen[-1][2] == sent
    assert answer["id"] == "abc"
    assert answer["result"]["x-unknown"] == {"kept": True}


async def test_jsonrpc_translated_when_off_or_when_a_push_config_rides_along(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        jsonrpc_backend: tuple[str, Recorder]) -> None:
    url, recorder = jsonrpc_backend
    gateway = await make_gateway({"t": _tenant(url, pass_through=False)}) + "/"
    sent = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
            "params": {"id": "t-1", "metadata": {"a": 1}}}
    async with http.post(gateway, json=sent) as resp:
        answer = await resp.json()
        assert resp.headers["A2A-Gateway-Dropped"] == "params.metadata"
    assert "metadata" not in json.loads(recorder.seen[-1][2])["params"]
    assert "x-unknown" not in answer["result"]

    gateway = await make_gateway({"t": _tenant(url)}) + "/"
    message = {"kind": "message", "messageId": "m-1", "role": "user",
               "parts": [{"kind": "text", "text": "hi"}]}
    push = {"url": "http://127.0.0.1:9/hook", "token": "tok"}
    sent = {"jsonrpc": "2.0", "id": 8, "method": "message/send",
            "params": {"message": message, "configuration": {"pushNotificationConfig": push}}}
    async with http.post(gateway, json=sent) as resp:
        answer = await resp.json()
    # Translated, so that the push relay and the webhook guard see the config.
    assert answer["result"]["id"] == "t-1"
    assert "x-unknown" not in answer["result"]


async def test_jsonrpc_backend_error_is_answered_in_the_dialect(
        http: aiohttp.ClientSession, make_gateway: MakeGateway) -> None:
    recorder = Recorder()
    error = {"code": -32001, "message": "Task not found"}
    async for url in _http_backend(
            lambda doc: {"jsonrpc": "2.0", "id": doc["id"], "error": error}, recorder):
        gateway = await make_gateway({"t": _tenant(url + "/")}) + "/"
        sent = {"jsonrpc": "2.0", "id": "q", "method": "tasks/get", "params": {"id": "nope"}}
        async with http.post(gateway, json=sent) as resp:
            answer = await resp.json()
    assert answer["id"] == "q"
    assert answer["error"]["code"] == -32001
    assert answer["error"]["message"] == "Task not found"


async def test_rest_request_and_answer_pass_as_sent(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        rest_backend: tuple[str, Recorder]) -> None:
    url, recorder = rest_backend
    gateway = await make_gateway({"acme": _tenant(url, "HTTP+JSON")})
    async with http.get(f"{gateway}/acme/v1/tasks/t-1?historyLength=2") as resp:
        answer = await resp.json()
        assert resp.status == 200
    assert recorder.seen[-1][:2] == ("GET", "/v1/tasks/t-1?historyLength=2")
    assert answer["x-unknown"] == {"kept": True}


async def test_grpc_bytes_pass_as_sent(make_gateway: MakeGateway) -> None:
    from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb

    seen: list[bytes] = []
    task = v03pb.Task(id="t-1", context_id="c-1")
    # A field number no v0.3 Task defines: a decode/re-encode would drop it.
    answer = task.SerializeToString() + b"\xf8\x3e\x01"  # field 999, varint 1

    async def get_task(raw: bytes, _context: grpc.aio.ServicerContext) -> bytes:
        seen.append(raw)
        return answer

    handler = grpc.method_handlers_generic_handler("a2a.v1.A2AService", {
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task)})
    backend = grpc.aio.server()
    backend.add_generic_rpc_handlers((handler,))
    port = free_port()
    backend.add_insecure_port(f"127.0.0.1:{port}")
    await backend.start()
    try:
        grpc_port = free_port()
        await make_gateway({"g": _tenant(f"127.0.0.1:{port}", "GRPC")},
                           grpc_port=grpc_port, default_tenant="g")
        sent = v03pb.GetTaskRequest(name="tasks/t-1").SerializeToString() + b"\xf8\x3e\x02"
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            got = await channel.unary_unary("/a2a.v1.A2AService/GetTask")(sent, timeout=10)
    finally:
        await backend.stop(None)
    assert seen == [sent]
    assert got == answer
