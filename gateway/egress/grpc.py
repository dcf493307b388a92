"""gRPC backends of either version, over one long-lived channel per backend.

The configured `url` is `host:port` (config validation strips `grpc://` / `http://`).
Requests and answers travel as bytes made by translators/grpc_wire, so the channel
needs no generated stubs; errors are classified by translators/grpc_errors.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_headers, backend_timeout, backend_unavailable
from translators import grpc_wire as wire
from translators.errors import A2AError
from translators.grpc_errors import STATUS_DETAILS_KEY, error_from_grpc
from translators.versions import V10

# Metadata a backend may answer with that means something to the client.
_ECHOED = ("a2a-extensions", "x-a2a-extensions")
# HTTP headers that are not metadata on gRPC (the transport owns them).
_NOT_METADATA = frozenset({"content-type", "te", "user-agent", "host", "connection",
                           "content-length", "accept", "transfer-encoding"})


def _usable(key: str, value: str) -> bool:
    return (bool(key) and not key.startswith((":", "grpc-")) and key not in _NOT_METADATA
            and not key.endswith("-bin") and value.isascii() and value.isprintable())


class GrpcBackend:
    def __init__(self, config: BackendConfig, p03_options: dict[str, Any]) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.version: str = config.version
        self._options = p03_options
        self._channel: grpc.aio.Channel | None = None

    def channel(self) -> grpc.aio.Channel:
        # Made on first use, inside the running loop, and kept until close().
        if self._channel is None:
            backoff_ms = int(self.config.connect_timeout * 1000)
            self._channel = grpc.aio.insecure_channel(self.url, options=[
                # A backend that was down is retried soon, not after minutes of backoff.
                ("grpc.initial_reconnect_backoff_ms", min(200, backoff_ms)),
                ("grpc.max_reconnect_backoff_ms", backoff_ms),
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ])
        return self._channel

    def _metadata(self, call: Call) -> tuple[tuple[str, str], ...]:
        headers = backend_headers(call, self.config)
        if self.config.tenant and self.version != V10:
            # v0.3 messages have no tenant; a gateway behind us reads this key instead.
            headers[wire.TENANT_KEY] = self.config.tenant
        return tuple((k.lower(), v) for k, v in headers.items() if _usable(k.lower(), v))

    def _payload(self, call: Call) -> tuple[wire.WireMethod, bytes]:
        method = wire.wire_method(call.op, self.version)
        request = call.request
        if self.version == V10 and hasattr(request, "tenant"):
            # The client's tenant picked this backend; the backend gets its own, if any.
            request = type(request)()
            request.CopyFrom(call.request)
            request.tenant = self.config.tenant or ""  # type: ignore[attr-defined]
        return method, wire.request_from_canonical(method, request, call.ctx.loss,
                                                   **self._options)

    def _error(self, exc: grpc.aio.AioRpcError, seconds: float) -> A2AError:
        code = exc.code()
        message = exc.details() or ""
        details = next((v for k, v in exc.trailing_metadata() or ()
                        if k == STATUS_DETAILS_KEY and isinstance(v, bytes)), None)
        if details is None and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            return backend_unavailable(self.config, message or code.name)
        if details is None and code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return backend_timeout(self.config, seconds)
        return error_from_grpc(code.name, message, details)

    def _echo(self, call: Call, metadata: Any) -> None:
        for key, value in metadata or ():
            if key in _ECHOED and isinstance(value, str):
                call.ctx.response_headers[key] = value

    async def unary(self, call: Call) -> ProtoMessage | None:
        method, payload = self._payload(call)
        timeout = call.ctx.remaining(self.config.timeout)
        rpc = self.channel().unary_unary(method.path)
        try:
            pending = rpc(payload, timeout=timeout, metadata=self._metadata(call))
            raw = await pending
            self._echo(call, await pending.initial_metadata())
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc, timeout) from None
        return wire.response_to_canonical(method, raw, call.ctx.loss, call.request,
                                          **self._options)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        method, payload = self._payload(call)
        # A stream has no total deadline of its own, only the caller's, if any.
        deadline = (None if call.ctx.deadline is None
                    else max(0.001, call.ctx.deadline - time.monotonic()))
        idle = self.config.stream_idle_timeout
        pending = self.channel().unary_stream(method.path)(
            payload, timeout=deadline, metadata=self._metadata(call))
        try:
            first = True
            while True:
                try:
                    raw = await asyncio.wait_for(pending.read(), idle)
                except TimeoutError:
                    raise backend_timeout(self.config, idle) from None
                except grpc.aio.AioRpcError as exc:
                    raise self._error(exc, deadline or idle) from None
                if raw is grpc.aio.EOF:
                    return
                if first:
                    self._echo(call, await pending.initial_metadata())
                    first = False
                yield wire.stream_item_to_canonical(self.version, raw, call.ctx.loss, call.request,
                                                    **self._options)
        finally:
            # The client went away (or we failed): the backend call ends with us.
            pending.cancel()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
