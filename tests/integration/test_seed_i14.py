"""Seed I14: the gateway as a client subscribes over HTTP+JSON.

The seed: the client calls GET; on a method error it retries with POST (the spec says
POST, the proto GET). The REST egress tries the backend's `subscribe_verb` first (default
POST) and the other verb on 405. Here against stub v1.0 REST backends that accept one verb
only, recording what they were asked; the a2a-sdk 0.3.26 agent (GET only) is the real-SDK
case in tests/interop/test_seed_scenarios.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.support.helpers import MakeGateway, free_port

V10 = {"A2A-Version": "1.0"}
TASK = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
DONE = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}



async def _subscribe_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in ({"task": TASK}, {"statusUpdate": DONE}):
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
    await response.write_eof()
    return response


@pytest.fixture
async def one_verb_backend() -> AsyncIterator[Callable[[str], Any]]:
    """Start a v1.0 REST stub serving `/tasks/{id}:subscribe` on one verb only (the other
    gets aiohttp's 405); returns (url, the (verb, path) calls it got)."""
    runners: list[web.AppRunner] = []

    async def start(verb: str) -> tuple[str, list[tuple[str, str]]]:
        seen: list[tuple[str, str]] = []

        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            seen.append((request.method, request.path))
            return await handler(request)  # type: ignore[no-any-return]

        app = web.Application(middlewares=[record])
        app.router.add_route(verb, "/tasks/{id}:subscribe", _subscribe_stream)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        return f"http://127.0.0.1:{port}", seen

    yield start
    for runner in runners:
        await runner.cleanup()


async def _subscribe(http: aiohttp.ClientSession, gateway: str) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "t1"}}
    results = []
    async with http.post(gateway + "/", json=body, headers=V10) as resp:
        async for line in resp.content:
            if line.startswith(b"data:"):
                results.append(json.loads(line[5:]))
    return results


@pytest.mark.parametrize(("configured", "accepted"), [("GET", "POST"), ("POST", "GET")])
async def test_i14_subscribe_retries_with_the_other_verb_on_405(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        one_verb_backend: Callable[[str], Any], configured: str, accepted: str) -> None:
    """`subscribe_verb: GET` (the seed's order) against a POST-only backend, and the
    default POST against a GET-only one: one 405, then the other verb, then the stream."""
    url, seen = await one_verb_backend(accepted)
    gateway = await make_gateway({"s": {"backend": {
        "url": url, "version": "1.0", "binding": "HTTP+JSON", "subscribe_verb": configured,
        "precheck": False}}})
    lines = await _subscribe(http, gateway)
    assert [line["result"] for line in lines] == [{"task": TASK}, {"statusUpdate": DONE}]
    subscribes = [call for call in seen if call[1].endswith(":subscribe")]
    assert subscribes == [(configured, "/tasks/t1:subscribe"), (accepted, "/tasks/t1:subscribe")]


async def test_i14_the_configured_verb_alone_when_the_backend_accepts_it(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        one_verb_backend: Callable[[str], Any]) -> None:
    url, seen = await one_verb_backend("GET")
    gateway = await make_gateway({"s": {"backend": {
        "url": url, "version": "1.0", "binding": "HTTP+JSON", "subscribe_verb": "GET",
        "precheck": False}}})
    assert len(await _subscribe(http, gateway)) == 2
    assert [call for call in seen if call[1].endswith(":subscribe")] == [
        ("GET", "/tasks/t1:subscribe")]
