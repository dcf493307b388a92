"""Shared pieces of the hardening tests: a backend whose behaviour a test scripts and
whose requests it records, and small HTTP helpers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.helpers import free_port

JSON = dict[str, Any]
V10 = {"A2A-Version": "1.0"}


def j03_message(text: str = "hi", **extra: Any) -> JSON:
    return {"kind": "message", "messageId": f"m-{text}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


def p10_message(text: str = "hi", **extra: Any) -> JSON:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def rpc_body(method: str, params: Any = None, rid: Any = 1) -> JSON:
    body: JSON = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return body


async def post(http: aiohttp.ClientSession, url: str, body: Any = None, *,
               raw: bytes | None = None, headers: dict[str, str] | None = None,
               method: str = "POST") -> tuple[int, Any, Any]:
    """(status, headers, body as JSON when it parses, else text)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    async with http.request(method, url, data=data, headers={
            "Content-Type": "application/json", **(headers or {})}) as resp:
        text = await resp.text()
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        return resp.status, resp.headers, parsed


async def sse_lines(resp: aiohttp.ClientResponse) -> list[JSON]:
    return [json.loads(line[5:]) async for line in resp.content if line.startswith(b"data:")]


Handler = Callable[[web.Request, JSON], Awaitable[web.StreamResponse]]


class ScriptedBackend:
    """A v0.3 JSON-RPC agent on 127.0.0.1: each method answers with the handler the test
    set (default: a reply message), and every request body is recorded."""

    def __init__(self) -> None:
        self.seen: list[JSON] = []
        self.handlers: dict[str, Handler] = {}
        self.card: JSON | None = None
        self.url = ""

    async def _rpc(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append(body)
        handler = self.handlers.get(body.get("method", ""))
        if handler is not None:
            return await handler(request, body)
        return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "result": {
            "kind": "message", "messageId": "r", "role": "agent",
            "parts": [{"kind": "text", "text": "ok"}]}})

    async def _card(self, request: web.Request) -> web.Response:
        if self.card is None:
            return web.Response(status=404)
        return web.json_response(self.card)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ScriptedBackend]:
        app = web.Application()
        app.router.add_post("/", self._rpc)
        app.router.add_get("/.well-known/agent-card.json", self._card)
        runner = web.AppRunner(app, handler_cancellation=True)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/"
        try:
            yield self
        finally:
            await runner.cleanup()


async def endless_sse(request: web.Request, body: JSON) -> web.StreamResponse:
    """A stream that sends one working status, then stays open (an idle, healthy task)."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    event = {"jsonrpc": "2.0", "id": body["id"], "result": {
        "kind": "status-update", "taskId": "t", "contextId": "c",
        "status": {"state": "working"}, "final": False}}
    await response.write(f"data: {json.dumps(event)}\n\n".encode())
    await asyncio.sleep(3600)
    return response
