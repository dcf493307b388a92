"""One probe call toward one interface, in one dialect, answered as the wire said it.

The request is built by the gateway's own backend-side codecs (translators/dialects: the
same bytes the gateway would send), but the answer is kept raw enough to tell *which*
dialect answered: a JSON-RPC error with a `data` array is v1.0's, a REST 404 is an A2A
TaskNotFound only when its body is an A2A error (a bare `{"detail": "Not Found"}` is a
missing route), a gRPC status is v0.3's when its message is prefixed with the error's name.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.doctor.classify import (
    NO_A2A,
    classify_grpc,
    classify_jsonrpc,
    classify_rest,
    transport_error,
)
from gateway.doctor.report import ErrorSeen
from translators import operations as ops
from translators.dialects import dialect_for
from translators.dialects.base import BACKEND_HEADERS, EXTENSION_HEADERS
from translators.dialects.contract import Dialect, EventReader
from translators.dialects.grpc import TENANT_KEY
from translators.errors import A2AError
from translators.grpc_errors import STATUS_DETAILS_KEY
from translators.loss import LossReport
from translators.versions import V10

MAX_BYTES = 4 * 1024 * 1024
STREAM_EVENTS = 64  # a probe reads at most this many events of a stream


@dataclass
class Outcome:
    """What one probe call came back with."""

    result: ProtoMessage | None = None
    events: list[pb.StreamResponse] = field(default_factory=list)
    error: ErrorSeen | None = None
    headers: dict[str, str] = field(default_factory=dict)  # lowercase names
    raw: Any = None  # the parsed JSON body (HTTP bindings), for shape checks
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def reachable(self) -> bool:
        return self.error is None or self.error.name != "Unreachable"

    @property
    def a2a(self) -> bool:
        """The answer was an A2A answer (a result, or an error in an A2A error shape)."""
        return self.error is None or (self.error.shape != NO_A2A and self.reachable)


Headers = dict[str, str | None]  # None removes a header the dialect would send


def _headers(version: str, extra: Headers | None,
             extensions: list[str] | None = None) -> dict[str, str]:
    out: dict[str, str | None] = {"x-request-id": "a2a-gateway-doctor",
                                  **BACKEND_HEADERS[version]}
    if extensions:  # the ones the card requires: a client that supports them says so
        out.update(dict.fromkeys(EXTENSION_HEADERS[version], ",".join(extensions)))
    out.update(extra or {})
    return {k: v for k, v in out.items() if v is not None}


class Prober:
    """Calls one URL as one dialect (binding x version)."""

    def __init__(self, url: str, binding: str, version: str, session: aiohttp.ClientSession,
                 timeout: float = 8.0, tenant: str = "",
                 extensions: list[str] | None = None) -> None:
        self.url, self.binding, self.version = url, binding, version
        self.tenant = tenant or None
        self.extensions = list(extensions or [])
        self.session, self.timeout = session, timeout
        self._channel: grpc.aio.Channel | None = None
        # The gateway's own backend-side codecs for this dialect (the registry's row); any
        # other binding a card names is probed as gRPC (call()).
        self.dialect: Dialect = dialect_for(
            binding if binding in ("JSONRPC", "HTTP+JSON") else "GRPC", version)

    @property
    def dialect_name(self) -> str:
        return f"{self.binding} {self.version}"

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def call(self, op_name: str, request: ProtoMessage, *, headers: Headers | None = None,
                   extra_param: dict[str, Any] | None = None,
                   stream_events: int = STREAM_EVENTS) -> Outcome:
        op = ops.BY_NAME[op_name]
        started = time.monotonic()
        try:
            if self.dialect.binding == "GRPC":
                out = await self._grpc(op, request, headers, stream_events)
            else:
                out = await self._http(op, request, headers, extra_param, stream_events)
        except A2AError as err:  # an error event in a stream, or an answer that does not decode
            wire = {"JSONRPC": str(err.kind.code), "HTTP+JSON": "SSE error event"}
            out = Outcome(error=ErrorSeen(err.name, wire.get(self.binding, ""), err.message,
                                          self.dialect_name))
        except aiohttp.ClientPayloadError as exc:  # it answered, then broke off
            out = Outcome(error=ErrorSeen("BrokenAnswer", "", str(exc)[:300], "none"))
        except TimeoutError:
            out = Outcome(error=ErrorSeen("Timeout", "", f"no answer in {self.timeout:g} s",
                                          "none"))
        except (aiohttp.ClientError, OSError) as exc:
            out = Outcome(error=transport_error(str(exc) or type(exc).__name__))
        out.seconds = time.monotonic() - started
        return out

    # ------------------------------------------------------------------ HTTP

    async def _http(self, op: ops.Operation, request: ProtoMessage, headers: Headers | None,
                    extra_param: dict[str, Any] | None, limit: int) -> Outcome:
        """A JSON-RPC or HTTP+JSON call: the requests the dialect's backend codec makes
        (HTTP+JSON's subscribe: the other verb on 405, as the egress does)."""
        rpc = self.dialect.binding == "JSONRPC"
        codec = self.dialect.backend(op, request, LossReport(), self.tenant)
        tries = codec.requests
        base = self.url if rpc else self.url.rstrip("/")
        timeout = aiohttp.ClientTimeout(total=self.timeout, sock_connect=3)
        for attempt, out in enumerate(tries):
            body = out.body
            if extra_param and rpc:
                doc = json.loads(body)
                doc.setdefault("params", {}).update(extra_param)
                body = json.dumps(doc).encode()
            hdrs = _headers(self.version, headers, self.extensions)
            hdrs["accept"] = "text/event-stream" if op.streaming else "application/json"
            if body:
                hdrs["content-type"] = "application/json"
            async with self.session.request(out.verb, base + out.path,
                                            params=out.query or None, data=body or None,
                                            headers=hdrs, timeout=timeout,
                                            allow_redirects=False) as resp:
                seen = {k.lower(): v for k, v in resp.headers.items()}
                if resp.status == 405 and attempt + 1 < len(tries):
                    continue  # subscribe: the other verb (peers disagree on it)
                if op.streaming and resp.content_type == "text/event-stream":
                    return Outcome(events=await _read_sse(resp, codec.events(MAX_BYTES), limit),
                                   headers=seen)
                raw = await resp.content.read(MAX_BYTES)
                status = resp.status
            parsed, error = (classify_jsonrpc(status, raw, self.version) if rpc
                             else classify_rest(status, raw))
            if error is not None:
                return Outcome(error=error, headers=seen, raw=parsed)
            return Outcome(result=codec.read(status, raw), headers=seen, raw=parsed)
        return Outcome()

    # ------------------------------------------------------------------ gRPC

    def channel(self) -> grpc.aio.Channel:
        if self._channel is None:
            target = self.url.removeprefix("grpc://").removeprefix("http://").rstrip("/")
            self._channel = grpc.aio.insecure_channel(
                target, options=[("grpc.max_receive_message_length", MAX_BYTES),
                                 ("grpc.initial_reconnect_backoff_ms", 200)])
        return self._channel

    async def _grpc(self, op: ops.Operation, request: ProtoMessage, headers: Headers | None,
                    limit: int) -> Outcome:
        loss = LossReport()
        codec = self.dialect.backend(op, request, loss, self.tenant)
        out = codec.requests[0]
        sent = _headers(self.version, headers, self.extensions)
        if self.tenant and self.version != V10:
            sent[TENANT_KEY] = self.tenant  # v0.3 messages have no tenant field
        metadata = tuple((k.lower(), v) for k, v in sent.items())
        try:
            if not op.streaming:
                pending = self.channel().unary_unary(out.path)(
                    out.body, timeout=self.timeout, metadata=metadata)
                raw = await pending
                seen = {k: v for k, v in (await pending.initial_metadata() or ())
                        if isinstance(v, str)}
                return Outcome(result=codec.read(200, raw), headers=seen)
            stream = self.channel().unary_stream(out.path)(
                out.body, timeout=self.timeout, metadata=metadata)
            reader = codec.events(MAX_BYTES)
            events: list[pb.StreamResponse] = []
            try:
                while len(events) < limit:
                    try:
                        item = await stream.read()
                    except grpc.aio.AioRpcError as exc:
                        if events and exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                            break  # still going when the probe's time is up: it works
                        raise
                    if item is grpc.aio.EOF:
                        break
                    events.extend(reader.feed(item))
                seen = {k: v for k, v in (await stream.initial_metadata() or ())
                        if isinstance(v, str)}
            finally:
                stream.cancel()
            return Outcome(events=events, headers=seen)
        except grpc.aio.AioRpcError as exc:
            details = next((v for k, v in exc.trailing_metadata() or ()
                            if k == STATUS_DETAILS_KEY and isinstance(v, bytes)), None)
            return Outcome(error=classify_grpc(exc.code().name, exc.details() or "", details))


async def _read_sse(resp: aiohttp.ClientResponse, reader: EventReader,
                    limit: int) -> list[pb.StreamResponse]:
    events: list[pb.StreamResponse] = []
    try:
        async for chunk in resp.content.iter_any():
            events.extend(reader.feed(chunk))
            if len(events) >= limit:
                return events[:limit]
    except TimeoutError:
        if not events:
            raise
        return events  # a stream still going when the probe's time is up: it works
    events.extend(reader.close())
    return events[:limit]
