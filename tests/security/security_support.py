"""What the security tests share: a v0.3 JSON-RPC agent that records the headers of
every call, API keys, and raw calls in each client dialect."""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb
from aiohttp import web

from tests.support.auth_pki import issue, make_ca
from tests.support.helpers import free_port

JSON = dict[str, Any]
V10 = {"A2A-Version": "1.0"}


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def keys(**principals: str) -> JSON:
    """An `api_keys` section: principal name → key."""
    return {"keys": [{"principal": p, "sha256": sha(k)} for p, k in principals.items()]}


@dataclass
class RecordingAgent:
    """A v0.3 JSON-RPC agent answering every call with a reply message naming itself,
    and keeping the headers each call came with."""

    name: str = "agent"
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    set_cookie: str | None = None  # a Set-Cookie header on every answer
    # Authorization values it refuses, as a server with auth in front does: HTTP 401.
    refuse: set[str] = field(default_factory=set)

    async def _rpc(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if request.headers.get("Authorization") in self.refuse:
            return web.Response(status=401, text="unauthorized",
                                headers={"WWW-Authenticate": "Bearer"})
        if body.get("method") == "message/stream":  # one working status, then silence
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            event = {"jsonrpc": "2.0", "id": body.get("id"), "result": {
                "kind": "status-update", "taskId": "t", "contextId": "c",
                "status": {"state": "working"}, "final": False}}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
            await asyncio.sleep(3600)
            return response
        return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "result": {
            "kind": "message", "messageId": "r", "role": "agent",
            "parts": [{"kind": "text", "text": f"from {self.name}"}]}},
            headers={"Set-Cookie": self.set_cookie} if self.set_cookie else None)

    @asynccontextmanager
    async def running(self, tls: ssl.SSLContext | None = None,
                      ) -> AsyncIterator[RecordingAgent]:
        app = web.Application()
        app.router.add_post("/", self._rpc)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=tls).start()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}/"
        try:
            yield self
        finally:
            await runner.cleanup()


def rpc_send(version: str = "0.3", text: str = "hi") -> JSON:
    if version == "0.3":
        return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m1", "role": "user",
            "parts": [{"kind": "text", "text": text}]}}}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}}


def rest_send(version: str = "1.0", text: str = "hi") -> JSON:
    if version == "0.3":  # P03: the v0.3 REST binding's proto JSON
        return {"message": {"messageId": "m1", "role": "ROLE_USER",
                            "content": [{"text": text}]}}
    return {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}


async def post(http: aiohttp.ClientSession, url: str, body: JSON,
               headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    async with http.post(url, json=body, headers=headers or {}) as resp:
        return resp.status, dict(resp.headers), await resp.json(content_type=None)


GRPC_SEND = {"1.0": "/lf.a2a.v1.A2AService/SendMessage", "0.3": "/a2a.v1.A2AService/SendMessage"}


def grpc_send_request(version: str, text: str = "hi") -> bytes:
    if version == "1.0":
        return pb.SendMessageRequest(message=pb.Message(
            message_id="m1", role=pb.ROLE_USER, parts=[pb.Part(text=text)])).SerializeToString()
    from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb

    return v03pb.SendMessageRequest(request=v03pb.Message(
        message_id="m1", role=v03pb.ROLE_USER,
        content=[v03pb.Part(text=text)])).SerializeToString()


async def grpc_send(target: str, version: str, metadata: tuple[tuple[str, str], ...] = (),
                    channel: grpc.aio.Channel | None = None) -> bytes:
    """One SendMessage over gRPC; raises grpc.aio.AioRpcError when refused."""
    own = channel is None
    channel = channel or grpc.aio.insecure_channel(target)
    try:
        call = channel.unary_unary(GRPC_SEND[version])
        answer: bytes = await call(grpc_send_request(version), metadata=metadata, timeout=10)
        return answer
    finally:
        if own:
            await channel.close()


class Pki:
    """One CA with a server and a client certificate, and a stranger's certificate from
    another CA: the files the TLS tests hand a gateway and its callers."""

    def __init__(self) -> None:
        self.ca, other_ca = make_ca("gateway test CA"), make_ca("another CA")
        self.server = issue(self.ca, "gateway", server=True)
        self.client = issue(self.ca, "billing-agent")
        self.stranger = issue(other_ca, "billing-agent")

    def write(self, folder: Path) -> dict[str, str]:
        """The files in ``folder``, by role: ca, cert/key, client_*, stranger_*."""
        (folder / "ca.pem").write_bytes(self.ca.cert_pem)
        files = {"ca": str(folder / "ca.pem")}
        files["cert"], files["key"] = self.server.write(folder, "server")
        files["client_cert"], files["client_key"] = self.client.write(folder, "client")
        files["stranger_cert"], files["stranger_key"] = self.stranger.write(folder, "stranger")
        return files


PKI = Pki()
