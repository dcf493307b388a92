"""Raw callers of the gateway in the six client dialects (aiohttp and grpc.aio, no SDK).

Each call records an Observation: the stream events received, then the error exactly
as the client saw it, reduced to a dict of facts (how it came, HTTP status or gRPC code,
JSON-RPC code, reason, ...) that fault_expect.py compares with the contract.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2

from tests.faults.fault_cases import Cell, Fault, Mode
from tests.faults.fault_wire import GRPC_SERVICES, Dialect, as_bytes, as_json, send_request

CELL_SECONDS = 3.0  # every call, whatever the fault, must be over by then
Outcome = Literal["error", "ok", "hung", "broken"]
_RPC_METHODS = {("0.3", "unary"): "message/send", ("0.3", "stream"): "message/stream",
                ("1.0", "unary"): "SendMessage", ("1.0", "stream"): "SendStreamingMessage"}
_REST_PREFIX = {"0.3": "/v1/message:", "1.0": "/message:"}
_REST_VERB = {"unary": "send", "stream": "stream"}
_GRPC_METHODS = {"unary": "SendMessage", "stream": "SendStreamingMessage"}


@dataclass
class Observation:
    """What one client saw of one call."""

    events: int = 0  # stream events before the error (or the end)
    outcome: Outcome = "hung"  # hung: CELL_SECONDS passed; broken: transport error
    error: dict[str, Any] = field(default_factory=dict)  # facts of the error as seen
    detail: str = ""  # the raw error, shortened, for failure messages
    seconds: float = 0.0

    def event(self) -> None:
        if self.outcome == "error":
            self.error["after"] = self.error.get("after", 0) + 1  # nothing may follow it
        else:
            self.events += 1

    def fail(self, facts: dict[str, Any], raw: Any) -> None:
        if self.outcome == "error":  # a second error after the first
            self.error["after"] = self.error.get("after", 0) + 1
            return
        self.outcome, self.error = "error", facts
        if facts.get("carrier") == "sse":
            self.error["after"] = 0  # frames after the error: there must be none
        self.detail = json.dumps(raw, default=str)[:300] if not isinstance(raw, str) else raw[:300]

    def done(self) -> None:
        if self.outcome != "error":
            self.outcome = "ok"

    def summary(self) -> str:
        if self.outcome != "error":
            return f"{self.outcome} after {self.seconds:.2f}s, {self.events} events {self.detail}"
        return f"{self.events} events, then {self.error} {self.detail}"


@dataclass
class SseEvent:
    name: str
    data: str


async def sse_events(lines: aiohttp.StreamReader) -> AsyncIterator[SseEvent]:
    """WHATWG SSE framing, as much of it as A2A uses: `event:`, multi-line `data:`."""
    name, data = "message", list[str]()
    async for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(name, "\n".join(data))
            name, data = "message", list[str]()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            name = line[6:].strip()
    if data:
        yield SseEvent(name, "\n".join(data))


def _is_sse(resp: aiohttp.ClientResponse) -> bool:
    return resp.headers.get("Content-Type", "").startswith("text/event-stream")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_info_reason(details: Any) -> str | None:
    """The reason of the first google.rpc.ErrorInfo in a ProtoJSON details list."""
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("ErrorInfo"):
            return detail.get("reason")
    return None


# ---------------------------------------------------------------- facts per binding


def jsonrpc_facts(version: str, payload: dict[str, Any], rid: int, carrier: str,
                  http: int) -> dict[str, Any]:
    err = payload["error"] if isinstance(payload.get("error"), dict) else {}
    data = err.get("data")
    if version == "1.0":
        reason = _error_info_reason(data)
    else:
        reason = data.get("reason") if isinstance(data, dict) else None
    return {"carrier": carrier, "http": http, "code": err.get("code"), "reason": reason,
            "id_ok": payload.get("id") == rid}


def rest_facts(version: str, body: Any, carrier: str, http: int | None) -> dict[str, Any]:
    body = body if isinstance(body, dict) else {}
    facts: dict[str, Any] = {"carrier": carrier, "http": http}
    if version == "1.0":
        inner = body.get("error") if isinstance(body.get("error"), dict) else {}
        facts |= {"body_code": inner.get("code"), "status": inner.get("status"),
                  "reason": _error_info_reason(inner.get("details"))}
    else:
        facts |= {"reason": body.get("reason"), "has_message": isinstance(body.get("message"), str)}
    return facts


def grpc_facts(version: str, err: grpc.aio.AioRpcError) -> dict[str, Any]:
    facts: dict[str, Any] = {"carrier": "grpc", "status": err.code().name}
    details = err.details() or ""
    if version == "0.3":
        facts["prefix"] = details.partition(": ")[0] if ": " in details else None
        return facts
    raw = next((v for k, v in err.trailing_metadata() or () if k == "grpc-status-details-bin"),
               None)
    status = status_pb2.Status.FromString(raw) if isinstance(raw, bytes) else None
    facts["details_code"] = code_pb2.Code.Name(status.code) if status is not None else None
    facts["reason"] = None
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            facts["reason"] = info.reason
            break
    return facts


# ---------------------------------------------------------------- the callers


class GatewayClient:
    """Calls one gateway (HTTP base URL and gRPC host:port) in any client dialect."""

    def __init__(self, http_base: str, grpc_target: str) -> None:
        self.http_base = http_base
        self.grpc_target = grpc_target
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._channel: grpc.aio.Channel | None = None

    async def __aenter__(self) -> GatewayClient:
        # Each call on its own connection: a fault in one cell cannot reach another.
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        self._channel = grpc.aio.insecure_channel(self.grpc_target)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._session is not None and self._channel is not None
        await self._session.close()
        await self._channel.close()

    async def observe(self, client: Dialect, tenant: str, mode: Mode) -> Observation:
        """One call, bounded by CELL_SECONDS; what the client saw."""
        obs = Observation()
        call = {"JSONRPC": self._jsonrpc, "HTTP+JSON": self._rest, "GRPC": self._grpc}
        started = time.monotonic()
        try:
            await asyncio.wait_for(call[client.binding](client, tenant, mode, obs), CELL_SECONDS)
        except TimeoutError:
            if obs.outcome != "error":
                obs.outcome = "hung"
        except Exception as exc:  # whatever a broken gateway sends is an observation
            if obs.outcome != "error":
                obs.outcome, obs.detail = "broken", f"{type(exc).__name__}: {exc}"[:300]
        obs.seconds = time.monotonic() - started
        return obs

    def _headers(self, client: Dialect) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if client.version == "1.0" else {}

    async def _jsonrpc(self, client: Dialect, tenant: str, mode: Mode, obs: Observation) -> None:
        assert self._session is not None
        rid = next(self._ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": _RPC_METHODS[(client.version, mode)],
                "params": as_json(send_request(client))}
        async with self._session.post(f"{self.http_base}/{tenant}", json=body,
                                      headers=self._headers(client)) as resp:
            if _is_sse(resp):
                async for event in sse_events(resp.content):
                    self._rpc_frame(client, rid, _json(event.data), "sse", resp.status, obs)
            else:
                self._rpc_frame(client, rid, _json(await resp.text()), "json", resp.status, obs)
        obs.done()

    def _rpc_frame(self, client: Dialect, rid: int, payload: Any, carrier: str, http: int,
                   obs: Observation) -> None:
        if isinstance(payload, dict) and "error" in payload:
            obs.fail(jsonrpc_facts(client.version, payload, rid, carrier, http), payload)
        elif isinstance(payload, dict) and "result" in payload:
            if carrier == "sse":
                obs.event()
        else:
            obs.fail({"carrier": carrier, "http": http, "unreadable": True}, payload)

    async def _rest(self, client: Dialect, tenant: str, mode: Mode, obs: Observation) -> None:
        assert self._session is not None
        url = f"{self.http_base}/{tenant}{_REST_PREFIX[client.version]}{_REST_VERB[mode]}"
        async with self._session.post(url, json=as_json(send_request(client)),
                                      headers=self._headers(client)) as resp:
            if _is_sse(resp):
                async for event in sse_events(resp.content):
                    if event.name == "error":
                        body = _json(event.data)
                        facts = rest_facts(client.version, body, "sse", None)
                        obs.fail({**facts, "event": event.name}, body)
                    else:
                        obs.event()
            elif resp.status >= 400:
                body = _json(await resp.text())
                obs.fail(rest_facts(client.version, body, "json", resp.status), body)
        obs.done()

    async def _grpc(self, client: Dialect, tenant: str, mode: Mode, obs: Observation) -> None:
        assert self._channel is not None
        path = f"/{GRPC_SERVICES[client.version]}/{_GRPC_METHODS[mode]}"
        metadata = (("a2a-version", "1.0"),) if client.version == "1.0" else (
            ("x-a2a-tenant", tenant),)
        request = as_bytes(send_request(client, tenant))
        try:
            if mode == "stream":
                async for _ in self._channel.unary_stream(path)(request, metadata=metadata):
                    obs.event()
            else:
                await self._channel.unary_unary(path)(request, metadata=metadata)
        except grpc.aio.AioRpcError as err:
            obs.fail(grpc_facts(client.version, err), f"{err.code().name}: {err.details()}")
        obs.done()


# What the suite's `fault_gateway` fixture returns: start a gateway whose tenants, one per
# cell, reach a backend of that dialect misbehaving as that fault; a client of it.
FaultGateway = Callable[[Dialect, Fault, list[Cell]], Awaitable[GatewayClient]]
