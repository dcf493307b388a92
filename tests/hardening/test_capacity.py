"""Defect 1: streams must not starve unary calls to the same backend, and a full backend
answers with a limit error in the caller's dialect, not a hang."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from tests.hardening.hardening_support import (
    V10,
    ScriptedBackend,
    endless_sse,
    j03_message,
    p10_message,
    post,
    rpc_body,
)
from tests.support.helpers import MakeGateway, v03

# The streams these tests open are closed by their clients at the end, in front of an
# endless backend: without a hold they end with them (a held one is read on, by design:
# docs/streams.md, "Resuming a stream").
NO_HOLD = {"path": ":memory:", "journal": {"hold": 0}}


async def _open_stream(http: aiohttp.ClientSession, url: str,
                       opened: list[aiohttp.ClientResponse]) -> None:
    resp = await http.post(url, json=rpc_body("message/stream", {"message": j03_message("s")}))
    await resp.content.readline()  # the first event is through: the stream is open
    opened.append(resp)


async def test_open_streams_do_not_delay_unary_calls(make_gateway: MakeGateway) -> None:
    # 150 open streams: more than the 128 connections per host main pooled for everything.
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0)) as http:
        backend.handlers["message/stream"] = endless_sse
        gw = await make_gateway({"b": {"backend": {**v03(backend.url)["backend"],
                                                   "timeout": 5}}}, state=NO_HOLD) + "/b"
        opened: list[aiohttp.ClientResponse] = []
        await asyncio.wait_for(asyncio.gather(*(_open_stream(http, gw, opened)
                                                for _ in range(150))), 30)
        # Queued behind the streams, the call would wait for a connection they never give
        # back, and answer the backend timeout's error, not the backend's answer.
        status, _, reply = await post(http, gw, rpc_body("message/send",
                                                         {"message": j03_message()}))
        assert status == 200 and reply["result"]["parts"][0]["text"] == "ok", reply
        for resp in opened:
            resp.close()


async def test_a_full_backend_refuses_with_a_limit_error(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/stream"] = endless_sse
        gw = await make_gateway({"b": {"backend": {**v03(backend.url)["backend"],
                                                   "max_streams": 2}}},
                                limits={"pool_wait": 0.2}, state=NO_HOLD) + "/b"
        opened: list[aiohttp.ClientResponse] = []
        await asyncio.gather(_open_stream(http, gw, opened), _open_stream(http, gw, opened))
        # The third stream, in three dialects: a bounded wait, then the limit error.
        started = time.monotonic()
        status, headers, reply = await post(http, gw, rpc_body("SendStreamingMessage",
                                                               {"message": p10_message()}),
                                            headers=V10)
        assert time.monotonic() - started < 2
        # JSON-RPC too: 429 and Retry-After for proxies and retry logic, the error in the body.
        assert status == 429 and headers["Retry-After"] == "1"
        assert reply["error"]["code"] == -32603
        assert reply["error"]["data"][0]["reason"] == "RESOURCE_EXHAUSTED"
        assert reply["error"]["data"][0]["metadata"]["limit"] == "backend.max_streams"
        status, headers, body = await post(http, gw + "/message:stream",
                                           {"message": p10_message()}, headers=V10)
        assert status == 429 and headers["Retry-After"] == "1"
        assert body["error"]["status"] == "RESOURCE_EXHAUSTED"
        status, headers, body = await post(http, gw + "/v1/message:stream", {"message": {
            "messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}})
        assert status == 429 and body["reason"] == "RESOURCE_EXHAUSTED"
        for resp in opened:
            resp.close()
        # Closed streams free their slots.
        await asyncio.sleep(0.2)
        again: list[aiohttp.ClientResponse] = []
        await asyncio.wait_for(_open_stream(http, gw, again), 5)
        again[0].close()


async def test_limits_are_exported_as_metrics(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        gw = await make_gateway({"b": {"backend": {**v03(backend.url)["backend"],
                                                   "max_calls": 7}}})
        async with http.get(gw + "/metrics") as resp:
            text = await resp.text()
        assert f'a2a_gateway_limit_capacity{{limit="backend.max_calls",scope="{backend.url}"}} 7.0' \
            in text
        assert 'a2a_gateway_limit_capacity{limit="max_streams",scope="gateway"} 10000.0' in text


async def _p50_unary(http: aiohttp.ClientSession, url: str, n: int = 30) -> float:
    times = []
    for _ in range(n):
        started = time.monotonic()
        status, _, _ = await post(http, url, rpc_body("message/send", {"message": j03_message()}))
        assert status == 200
        times.append(time.monotonic() - started)
    return sorted(times)[n // 2]


async def test_200_idle_streams_do_not_slow_a_unary_call(make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0)) as http:
        backend.handlers["message/stream"] = endless_sse
        gw = await make_gateway({"b": v03(backend.url)}, state=NO_HOLD) + "/b"
        idle = await _p50_unary(http, gw)
        opened: list[aiohttp.ClientResponse] = []
        await asyncio.wait_for(asyncio.gather(*(_open_stream(http, gw, opened)
                                                for _ in range(200))), 30)
        loaded = await _p50_unary(http, gw)
        for resp in opened:
            resp.close()
    # Same process for client, gateway and backend: allow scheduling noise, not queueing.
    assert loaded < 2 * idle + 0.02, (idle, loaded)
