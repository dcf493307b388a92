"""Shared pieces of the hardening tests: a backend whose behaviour a test scripts and
whose requests it records, a relay that stalls answers part-way, and small HTTP helpers."""

from __future__ import annotations

import asyncio
import json
import socket
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


class HeldRelay:
    """A TCP relay to a server on loopback that stalls each answer part-way, as a
    client's network can: the client's bytes pass freely; of the server's, the first
    ``budget`` of each connection pass, then the rest waits for `release()`. `held` has
    one event per connection, set once its budget is used up. Its sockets take little
    (`SO_RCVBUF`), so that what the server writes past the budget waits in the server's
    own socket (at most its send buffer, 4 MiB here: net.ipv4.tcp_wmem)."""

    def __init__(self, target_port: int, budget: int) -> None:
        self.target_port = target_port
        self.budget = budget
        self.held: list[asyncio.Event] = []
        self._released = asyncio.Event()
        self._pumps: set[asyncio.Task[None]] = set()

    def release(self) -> None:
        self._released.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[int]:
        """The relay's port."""
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        try:
            yield server.sockets[0].getsockname()[1]
        finally:
            server.close()
            for pump in self._pumps:
                pump.cancel()
            await asyncio.gather(*self._pumps, return_exceptions=True)

    async def _relay(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.target_port))
        server_r, server_w = await asyncio.open_connection(sock=sock)
        held = asyncio.Event()
        self.held.append(held)
        for pump in (self._pump(client_r, server_w, None), self._pump(server_r, client_w, held)):
            task = asyncio.create_task(pump)
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    held: asyncio.Event | None) -> None:
        passed = 0
        try:
            while data := await reader.read(64 * 1024):
                if held is not None and not self._released.is_set() \
                        and passed + len(data) > self.budget:
                    writer.write(data[:self.budget - passed])
                    data = data[self.budget - passed:]
                    held.set()
                    await self._released.wait()
                passed += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
