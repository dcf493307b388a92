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

Per stream event (the outside review's way, its §2.2 and appendix): path B streamed
twice, `stream: 2` and `stream: 6`, and the difference divided by the difference in
events. Counted there: Python calls (every `call` profile event of a function of gateway/
or translators/, a generator's or coroutine's resume included, gateway/demo skipped),
crossings, and side switches (in the order the calls come, a call on the other side from
the call before: work that goes to translators/ and back to gateway/ is two).
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


DEMO = str(ROOT / "gateway" / "demo")


def _side(filename: str) -> str | None:
    """"g" (gateway/), "t" (translators/), or None (a library, the demo agent)."""
    if filename.startswith(TRANSLATORS):
        return "t"
    if filename.startswith(GATEWAY) and not filename.startswith(DEMO):
        return "g"
    return None


class Tracer:
    def __init__(self) -> None:
        self.crossings: list[str] = []
        self.calls = 0  # Python calls in either package, resumes included
        self.switches = 0  # calls on the other side from the call before (in either package)
        self._last: str | None = None
        self.per_side = {"g": 0, "t": 0}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_code.co_filename
        caller = frame.f_back.f_code.co_filename if frame.f_back else ""
        if callee.startswith(TRANSLATORS) and caller.startswith(GATEWAY):
            self.crossings.append(f"{Path(callee).stem}.{frame.f_code.co_name}")
        side = _side(callee)
        if side is None:
            return
        self.calls += 1
        self.per_side[side] += 1
        self.switches += self._last is not None and side != self._last
        self._last = side

    def __enter__(self) -> Tracer:
        self.crossings.clear()
        self.calls = self.switches = 0
        self._last = None
        self.per_side = {"g": 0, "t": 0}
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

    def stream(count: int) -> dict[str, Any]:
        return {"message": {"messageId": f"s{count}", "role": "ROLE_USER",
                            "parts": [{"text": f"stream: {count}"}]}}

    traced: dict[int, tuple[Tracer, int]] = {}
    try:
        async with aiohttp.ClientSession() as http:
            for tenant in ("/g10", "/j03") * 3:  # warm: connections, cards, channels
                async with http.post(base + tenant, json=send) as resp:
                    await resp.read()
            with Tracer() as unary:
                async with http.post(base + "/g10", json=send) as resp:
                    await resp.read()
            for count in (2, 2, 6):  # the first one warms the stream path
                with Tracer() as streamed:
                    async with http.post(base + "/j03/message:stream", json=stream(count),
                                         headers={"A2A-Version": "1.0"}) as resp:
                        events = [line async for line in resp.content
                                  if line.startswith(b"data:")]
                traced[count] = (streamed, len(events))
    finally:
        await outer.stop()
    (short, few), (streamed, many) = traced[2], traced[6]
    extra = many - few

    def per_event(longer: int, shorter: int) -> float:
        return round((longer - shorter) / extra, 2)

    events = [b""] * few
    print(json.dumps({
        "unary_jsonrpc03_to_grpc10": {"crossings": len(unary.crossings),
                                      "calls": unary.crossings},
        "stream_rest10_from_jsonrpc03": {"events": len(events),
                                         "crossings": len(short.crossings),
                                         "calls": short.crossings},
        "stream_per_event": {
            "crossings": per_event(len(streamed.crossings), len(short.crossings)),
            "side_switches": per_event(streamed.switches, short.switches),
            "python_calls": per_event(streamed.calls, short.calls),
            "python_calls_gateway": per_event(streamed.per_side["g"], short.per_side["g"]),
            "python_calls_translators": per_event(streamed.per_side["t"],
                                                  short.per_side["t"]),
            "events": [few, many]},
    }, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
