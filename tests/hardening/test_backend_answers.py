"""Defects 7, 8, 13 (backend side), 14: what a misbehaving backend sends is bounded in
time and size, a JSON-RPC answer to another id is refused, and nothing about the
backend's address reaches a caller. (tests/faults covers every dialect pair.)"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

import aiohttp
from aiohttp import web

from tests.hardening.hardening_support import (
    V10,
    ScriptedBackend,
    j03_message,
    p10_message,
    post,
    rpc_body,
)
from tests.support.helpers import MakeGateway, free_port, v03


async def drip(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """A stream answered with a JSON body that never ends, one byte every 10 ms."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    for _ in range(100_000):
        await response.write(b" ")
        await asyncio.sleep(0.01)
    return response


async def huge(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """A valid answer of about 100 MB, streamed (no Content-Length)."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    head = ('{"jsonrpc":"2.0","id":' + str(body["id"]) + ',"result":{"kind":"message",'
            '"messageId":"r","role":"agent","parts":[{"kind":"text","text":"')
    await response.write(head.encode())
    chunk = b"x" * (1024 * 1024)
    for _ in range(100):
        await response.write(chunk)
    await response.write(b'"}]}}')
    return response


async def wrong_id(request: web.Request, body: dict[str, Any]) -> web.Response:
    return web.json_response({"jsonrpc": "2.0", "id": body["id"] + 1000, "result": {
        "kind": "message", "messageId": "r", "role": "agent",
        "parts": [{"kind": "text", "text": "not yours"}]}})


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_dripping_non_sse_stream_times_out(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["SendStreamingMessage"] = drip
        gw = await make_gateway({"b": {"backend": {**v03(backend.url, "1.0")["backend"],
                                                   "first_event_timeout": 0.5}}})
        started = time.monotonic()
        _, _, reply = await post(http, gw + "/b", rpc_body(
            "SendStreamingMessage", {"message": p10_message()}), headers=V10)
        assert time.monotonic() - started < 3
        assert reply["error"]["data"][0]["reason"] == "BACKEND_TIMEOUT"


async def test_a_huge_answer_is_refused_without_holding_it(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/send"] = huge
        gw = await make_gateway({"b": v03(backend.url)})  # default max_answer_bytes: 16 MiB
        before = _rss_mb()
        _, _, reply = await post(http, gw + "/b", rpc_body("message/send",
                                                          {"message": j03_message()}))
        assert reply["error"]["code"] == -32006
        assert "larger than 16777216 bytes" in reply["error"]["message"]
        assert _rss_mb() - before < 80  # main read all 100 MB (and more) into memory


async def test_an_answer_to_another_request_id_is_refused(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/send"] = wrong_id
        gw = await make_gateway({"b": v03(backend.url)})
        _, _, reply = await post(http, gw + "/b", rpc_body("message/send",
                                                          {"message": j03_message()}))
        assert reply["error"]["code"] == -32006 and "not yours" not in str(reply)


async def test_callers_learn_the_tenant_and_request_id_never_the_backend_address(
        make_gateway: MakeGateway) -> None:
    dead = f"127.0.0.1:{free_port()}"
    gw = await make_gateway({"gone": v03(f"http://{dead}/")})
    async with aiohttp.ClientSession() as http:
        _, headers, reply = await post(http, gw + "/gone", rpc_body(
            "SendMessage", {"message": p10_message()}), headers=V10)
        error = reply["error"]
        assert error["data"][0]["reason"] == "BACKEND_UNAVAILABLE"
        assert dead not in str(reply) and "tenant gone" in error["message"]
        assert headers["X-Request-ID"] in error["message"]
        async with http.get(gw + "/readyz") as resp:
            assert resp.status == 503
            text = await resp.text()
        assert dead not in text and dead.split(":")[1] not in text
        assert (await resp.json())["tenants"]["gone"] == {"ready": False,
                                                           "probe": "unreachable"}


async def test_configured_backend_authorization_wins_unless_told_otherwise(
        make_gateway: MakeGateway) -> None:
    """Defect 18 (second half): which Authorization the backend gets is the config's
    choice (`header_precedence`), not whoever happens to send one."""
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        seen: list[str] = []

        async def record(request: web.Request, body: dict[str, Any]) -> web.Response:
            seen.append(request.headers.get("Authorization", ""))
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {
                "kind": "message", "messageId": "r", "role": "agent",
                "parts": [{"kind": "text", "text": "ok"}]}})

        backend.handlers["message/send"] = record
        configured = {**v03(backend.url)["backend"], "headers": {"authorization": "Bearer gw"}}
        gw = await make_gateway({"default": {"backend": configured},
                                 "client": {"backend": {**configured,
                                                        "header_precedence": "client"}}})
        for tenant in ("default", "client"):
            await post(http, f"{gw}/{tenant}", rpc_body("message/send",
                                                        {"message": j03_message()}),
                       headers={"Authorization": "Bearer caller"})
        assert seen == ["Bearer gw", "Bearer caller"]
