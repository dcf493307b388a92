"""The scenarios: which client dialect talks to which backend through which hop.

Backends: `d03` is the demo agent (v0.3 JSON-RPC, ours), `s10` the official a2a-sdk
1.3.0 agent (v1.0 JSON-RPC, tests/interop/peers/agent_v10.py). Hops: `direct` (the
client calls the backend), `plain` (through bench/plain_proxy.py), `gw` (through the
gateway, tenant = backend name). A client speaks v0.3 JSON-RPC (`03`), v1.0 JSON-RPC
(`10`) or v1.0 HTTP+JSON (`rest10`).

Groups: `lat` one request at a time (latency: what each hop adds), `tput` 16 at a time
(throughput on a saturated machine), `stream` 16 streams at a time of `stream: 5`
(task, working, 5 artifact chunks ~50 ms apart, completed: 8 events). A group's
scenarios run round-robin in one load client process (bench/load.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

UNARY_TEXT = "bench ping"
STREAM_TEXT = "stream: 5"
STREAM_EVENTS = 8
JSON_HEADERS = {"Content-Type": "application/json"}
V10_HEADERS = {**JSON_HEADERS, "A2A-Version": "1.0"}


@dataclass(frozen=True)
class Route:
    """One way from a client to a backend."""

    name: str  # e.g. "gw-10-03": v1.0 client, gateway, v0.3 backend
    hop: str  # direct | plain | gw
    client: str  # 03 | 10 | rest10
    backend: str  # d03 | s10
    description: str


ROUTES = [
    Route("direct-03", "direct", "03", "d03", "v0.3 client → demo agent (v0.3)"),
    Route("plain-03", "plain", "03", "d03", "v0.3 client → plain proxy → demo agent"),
    Route("gw-03-03", "gw", "03", "d03", "v0.3 client → gateway → demo agent (same dialect)"),
    Route("gw-10-03", "gw", "10", "d03", "v1.0 JSON-RPC client → gateway → demo agent "
         "(translating)"),
    Route("gw-rest10-03", "gw", "rest10", "d03", "v1.0 REST client → gateway → demo agent "
         "(translating version and binding)"),
    Route("direct-10", "direct", "10", "s10", "v1.0 client → SDK 1.3.0 agent (v1.0)"),
    Route("plain-10", "plain", "10", "s10", "v1.0 client → plain proxy → SDK agent"),
    Route("gw-10-10", "gw", "10", "s10", "v1.0 client → gateway → SDK agent (same dialect)"),
    Route("gw-03-10", "gw", "03", "s10", "v0.3 client → gateway → SDK agent (translating)"),
]
BY_NAME = {p.name: p for p in ROUTES}
# The direct call and the plain-proxy call each gateway path is compared with: the same
# backend, the backend's own dialect.
REFERENCES = {"d03": ("direct-03", "plain-03"), "s10": ("direct-10", "plain-10")}


@dataclass(frozen=True)
class Group:
    """Scenarios run by one load client process, round-robin, `rounds` times."""

    name: str
    kind: str  # unary | stream
    concurrency: int
    rounds: int
    requests: int  # per scenario and round
    warmup: int  # per scenario and round, not measured
    time_cap: float  # seconds per scenario and round
    routes: tuple[str, ...]


ALL = tuple(r.name for r in ROUTES)
GROUPS = [
    Group("lat", "unary", 1, 3, 200, 25, 15.0, ALL),
    Group("tput", "unary", 16, 4, 1000, 100, 15.0, ALL),
    Group("stream", "stream", 16, 2, 80, 16, 15.0,
          tuple(r.name for r in ROUTES if r.client != "rest10")),
]
# The SDK agent serves unary calls ~5x slower than the demo agent: half the count keeps
# the run short (its rates are still measured on hundreds of calls).
UNARY_WEIGHT = {"d03": 1.0, "s10": 0.5}


@dataclass(frozen=True)
class Scenario:
    group: Group
    route: Route
    requests: int  # per round
    warmup: int

    @property
    def id(self) -> str:
        return f"{self.group.name}:{self.route.name}"


def scenarios(scale: float = 1.0) -> list[Scenario]:
    out = []
    for group in GROUPS:
        for name in group.routes:
            route = BY_NAME[name]
            weight = scale * (UNARY_WEIGHT[route.backend] if group.kind == "unary" else 1.0)
            out.append(Scenario(group, route, max(1, round(group.requests * weight)),
                                max(1, round(group.warmup * weight))))
    return out


def _message(client: str, text: str) -> dict[str, Any]:
    if client == "03":
        return {"kind": "message", "messageId": "bench-__N__", "role": "user",
                "parts": [{"kind": "text", "text": text}]}
    return {"messageId": "bench-__N__", "role": "ROLE_USER", "parts": [{"text": text}]}


def job_spec(scenario: Scenario, ports: dict[str, int]) -> dict[str, Any]:
    """One job of the load client (bench/load.py); `ports` has the keys d03, s10, plain
    and gw."""
    route, stream = scenario.route, scenario.group.kind == "stream"
    text = STREAM_TEXT if stream else UNARY_TEXT
    message = _message(route.client, text)
    base = (f"http://127.0.0.1:{ports[route.backend]}/" if route.hop == "direct"
            else f"http://127.0.0.1:{ports[route.hop]}/{route.backend}")
    if route.client == "rest10":
        url = base + ("/message:stream" if stream else "/message:send")
        body: dict[str, Any] = {"message": message}
    else:
        url = base
        method = {("03", False): "message/send", ("03", True): "message/stream",
                  ("10", False): "SendMessage", ("10", True): "SendStreamingMessage"}
        body = {"jsonrpc": "2.0", "id": "r-__N__", "method": method[(route.client, stream)],
                "params": {"message": message}}
    return {
        "id": scenario.id,
        "url": url,
        "headers": JSON_HEADERS if route.client == "03" else V10_HEADERS,
        "body": json.dumps(body),
        "kind": scenario.group.kind,
        "expect": f"echo: {UNARY_TEXT}",
        "events": STREAM_EVENTS,
        "requests": scenario.requests,
        "warmup": scenario.warmup,
    }


def group_spec(group: Group, todo: list[Scenario], ports: dict[str, int],
               watch: dict[str, int], deadline: float) -> dict[str, Any]:
    """The load client's whole spec for one group."""
    return {
        "concurrency": group.concurrency, "rounds": group.rounds,
        "time_cap": group.time_cap, "deadline": deadline, "request_timeout": 30.0,
        "watch": watch, "jobs": [job_spec(s, ports) for s in todo if s.group is group],
    }
