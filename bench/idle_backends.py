"""Stub v1.0 backends for the idle-streams benchmark (bench/idle_streams.py).

Each answers a stream with one event (a Task in TASK_STATE_WORKING) and then stays
silent until the caller goes away, or until `--hold` seconds have passed (then it ends
the stream), so a run can never leave streams open for ever. `SendMessage` answers at
once with a short agent Message (the unary probe). Nothing else is served.

    python -m bench.idle_backends http --port P [--hold S]   # JSON-RPC, streams as SSE
    python -m bench.idle_backends grpc --port P [--hold S]   # lf.a2a.v1.A2AService
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
from collections.abc import AsyncIterator
from typing import Any

import grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc
from aiohttp import web

HOST = "127.0.0.1"
REPLY_TEXT = "idle pong"
_numbers = itertools.count(1)


def task_json(number: int) -> dict[str, Any]:
    """A v1.0 StreamResponse (proto3 JSON) holding a working Task."""
    return {"task": {"id": f"t-{number}", "contextId": f"c-{number}",
                     "status": {"state": "TASK_STATE_WORKING"}}}


def reply_json(number: int) -> dict[str, Any]:
    """A v1.0 SendMessageResponse (proto3 JSON) holding an agent Message."""
    return {"message": {"messageId": f"r-{number}", "role": "ROLE_AGENT",
                        "parts": [{"text": REPLY_TEXT}]}}


# ---------------------------------------------------------------- JSON-RPC over HTTP


def http_app(hold: float) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        rid, number = body.get("id"), next(_numbers)
        if body.get("method") == "SendMessage":
            return web.json_response({"jsonrpc": "2.0", "id": rid, "result": reply_json(number)})
        if body.get("method") != "SendStreamingMessage":
            return web.json_response({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32601, "message": "Method not found"}})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})
        await response.prepare(request)
        event = {"jsonrpc": "2.0", "id": rid, "result": task_json(number)}
        await response.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        # Silence; the gateway closing the connection cancels this handler.
        await asyncio.sleep(hold)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/", handle)
    return app


async def serve_http(port: int, hold: float, stop: asyncio.Event) -> None:
    # handler_cancellation: a caller that goes away ends its handler (and its sleep).
    runner = web.AppRunner(http_app(hold), handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, port, backlog=1024).start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


# ---------------------------------------------------------------- gRPC


class IdleServicer(pb_grpc.A2AServiceServicer):
    def __init__(self, hold: float) -> None:
        self.hold = hold

    async def SendMessage(self, request: pb.SendMessageRequest,
                          context: grpc.aio.ServicerContext) -> pb.SendMessageResponse:
        number = next(_numbers)
        return pb.SendMessageResponse(message=pb.Message(
            message_id=f"r-{number}", role=pb.ROLE_AGENT, parts=[pb.Part(text=REPLY_TEXT)]))

    async def SendStreamingMessage(self, request: pb.SendMessageRequest,
                                   context: grpc.aio.ServicerContext,
                                   ) -> AsyncIterator[pb.StreamResponse]:
        number = next(_numbers)
        yield pb.StreamResponse(task=pb.Task(
            id=f"t-{number}", context_id=f"c-{number}",
            status=pb.TaskStatus(state=pb.TASK_STATE_WORKING)))
        await asyncio.sleep(self.hold)  # cancelled when the caller cancels the call


async def serve_grpc(port: int, hold: float, stop: asyncio.Event) -> None:
    server = grpc.aio.server(options=[
        # The gateway puts up to 100 streams on a connection; allow far more.
        ("grpc.max_concurrent_streams", 100_000),
        ("grpc.so_reuseport", 0),
    ])
    pb_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
        IdleServicer(hold), server)
    server.add_insecure_port(f"{HOST}:{port}")
    await server.start()
    try:
        await stop.wait()
    finally:
        await server.stop(0.5)


async def main_async(kind: str, port: int, hold: float) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await (serve_http if kind == "http" else serve_grpc)(port, hold, stop)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_backends")
    parser.add_argument("kind", choices=["http", "grpc"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hold", type=float, default=600.0,
                        help="seconds a stream stays silent before the backend ends it")
    args = parser.parse_args()
    asyncio.run(main_async(args.kind, args.port, args.hold))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
