"""Count how often the gateway's I/O side calls into the translators, per call and per
stream event (not part of `make bench`):

    .venv/bin/python -m bench.crossings

Runs, in this process, a gateway in front of the demo agent (v0.3 JSON-RPC) and of a
second gateway (its own process) that serves the demo agent as a v1.0 gRPC backend,
then traces with sys.setprofile:

- A: a v0.3 JSON-RPC `message/send` to the v1.0 gRPC backend (the review's path A);
- B: a v1.0 REST `message:stream` from the v0.3 JSON-RPC backend (`stream: 2`, path B).

A crossing is a call made from a function of gateway/ to a function of translators/
(calls within either package, and into libraries, do not count). Reported: crossings
for the whole unary call, and for the stream before its first event and per event.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp

from gateway.config.models import parse_config
from gateway.demo.agent import start_demo_agent
from gateway.server.app import Server
from tests.support.helpers import free_port, gateway_cmd, running, write_config

ROOT = Path(__file__).resolve().parent.parent
GATEWAY, TRANSLATORS = str(ROOT / "gateway"), str(ROOT / "translators")


class Tracer:
    def __init__(self) -> None:
        self.crossings: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_code.co_filename
        caller = frame.f_back.f_code.co_filename if frame.f_back else ""
        if callee.startswith(TRANSLATORS) and caller.startswith(GATEWAY):
            self.crossings.append(f"{Path(callee).stem}.{frame.f_code.co_name}")

    def __enter__(self) -> Tracer:
        self.crossings.clear()
        sys.setprofile(self)
        return self

    def __exit__(self, *_: object) -> None:
        sys.setprofile(None)


async def main() -> None:
    demo_port, inner_port, inner_grpc, outer_port = (free_port() for _ in range(4))
    demo = await start_demo_agent("127.0.0.1", demo_port)
    backend = {"url": f"http://127.0.0.1:{demo_port}/", "version": "0.3"}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp) / "inner.yaml", {
            "listen": {"http": f"127.0.0.1:{inner_port}", "grpc": f"127.0.0.1:{inner_grpc}"},
            "tenants": {"demo": {"backend": backend}}})
        with running(gateway_cmd(config), inner_port, log=Path(tmp) / "inner.log"):
            await _trace(outer_port, inner_grpc, backend)
    await demo.cleanup()


async def _trace(outer_port: int, inner_grpc: int, backend: dict[str, Any]) -> None:
    outer = Server(parse_config({"listen": {"http": f"127.0.0.1:{outer_port}"}, "tenants": {
        "g10": {"backend": {"url": f"127.0.0.1:{inner_grpc}", "version": "1.0",
                            "binding": "GRPC"}},
        "j03": {"backend": backend}}, "default_tenant": "j03"}))
    await outer.start()
    base = f"http://127.0.0.1:{outer_port}"
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}}}
    stream = {"message": {"messageId": "s", "role": "ROLE_USER",
                          "parts": [{"text": "stream: 2"}]}}
    try:
        async with aiohttp.ClientSession() as http:
            for tenant in ("/g10", "/j03") * 3:  # warm: connections, cards, channels
                async with http.post(base + tenant, json=send) as resp:
                    await resp.read()
            with Tracer() as unary:
                async with http.post(base + "/g10", json=send) as resp:
                    await resp.read()
            with Tracer() as streamed:
                async with http.post(base + "/j03/message:stream", json=stream,
                                     headers={"A2A-Version": "1.0"}) as resp:
                    events = [line async for line in resp.content if line.startswith(b"data:")]
    finally:
        await outer.stop()
    print(json.dumps({
        "unary_jsonrpc03_to_grpc10": {"crossings": len(unary.crossings),
                                      "calls": unary.crossings},
        "stream_rest10_from_jsonrpc03": {"events": len(events),
                                         "crossings": len(streamed.crossings),
                                         "calls": streamed.crossings},
    }, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
