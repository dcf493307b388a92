"""Shutdown with unary calls in flight on both listeners: one grace for all of them
(README "Shutdown")."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb
from aiohttp import web

from gateway.config.models import parse_config
from gateway.server.app import Server
from tests.hardening.hardening_support import ScriptedBackend, j03_message, post, rpc_body
from tests.support.helpers import free_port, v03

GRACE = 2.0
SEND = "/lf.a2a.v1.A2AService/SendMessage"


async def held(request: web.Request, body: dict[str, Any]) -> web.Response:
    """A backend that never answers (the call outlasts any grace)."""
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


def _send(text: str) -> bytes:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=text, role=pb.ROLE_USER, parts=[pb.Part(text=text)])).SerializeToString()


async def test_unary_calls_on_both_listeners_share_one_grace() -> None:
    """An HTTP and a gRPC call outlast the grace: the stop takes the grace once, not once
    per listener (the HTTP drain's grace, then gRPC's: twice as long, and a worker's
    supervisor kills a worker still running `shutdown_grace` + 5 s after SIGTERM)."""
    port, grpc_port = free_port(), free_port()
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/send"] = held
        server = Server(parse_config({
            "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
            "tenants": {"b": v03(backend.url)}, "default_tenant": "b",
            "state": {"path": ":memory:"}, "shutdown_grace": GRACE}))
        await server.start()
        stopped = False
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                send = channel.unary_unary(SEND)
                on_grpc = send(_send("g"), metadata=(("a2a-version", "1.0"),))
                on_http = asyncio.create_task(post(http, f"http://127.0.0.1:{port}/", rpc_body(
                    "message/send", {"message": j03_message("h")})))
                for _ in range(500):  # bounded: both calls reached the backend
                    if len(backend.seen) == 2:
                        break
                    await asyncio.sleep(0.01)
                assert len(backend.seen) == 2
                started = time.monotonic()
                await asyncio.wait_for(server.stop(), GRACE + 5)
                stopped = True
                elapsed = time.monotonic() - started
                grpc_code = await on_grpc.code()
                http_result = await asyncio.gather(on_http, return_exceptions=True)
        finally:
            if not stopped:
                await server.stop()
    # Both ended at the grace's end, unanswered (gRPC cancels what is left), and the
    # stop was over soon after.
    assert grpc_code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    assert isinstance(http_result[0], aiohttp.ServerDisconnectedError)
    # Without one shared grace the stop takes at least two (4 s): the bound leaves 1.5 s
    # for a loaded machine's overhead and still tells the two apart.
    assert GRACE <= elapsed < 2 * GRACE - 0.5, elapsed
