"""gRPC backends of either version, over long-lived channels.

The configured `url` is `host:port` (config validation strips `grpc://` / `http://`).
Requests and answers travel as bytes the backend's dialect makes and reads
(translators/dialects/grpc.py), so the channels need no generated stubs.

Unary calls and streams never share an HTTP/2 connection: a backend that caps concurrent
streams per connection (100 is common) would otherwise queue unary calls behind open
streams. Streams spread over as many connections as they need, STREAMS_PER_CONNECTION
each.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.config.tls import ClientTlsConfig
from gateway.egress.base import (
    ECHOED_HEADERS,
    EventBatches,
    backend_codec,
    backend_headers,
    backend_timeout,
    backend_unavailable,
    passed_through,
    too_large,
)
from gateway.tls.context import grpc_channel_credentials, grpc_channel_options
from translators.dialects import dialect_for
from translators.dialects.base import WireAnswer, WireRequest
from translators.dialects.contract import Dialect
from translators.dialects.grpc import TENANT_KEY
from translators.errors import A2AError
from translators.grpc_errors import STATUS_DETAILS_KEY, error_from_grpc
from translators.versions import V10

# HTTP headers that are not metadata on gRPC (the transport owns them).
_NOT_METADATA = frozenset({"content-type", "te", "user-agent", "host", "connection",
                           "content-length", "accept", "transfer-encoding"})
STREAMS_PER_CONNECTION = 100


def _usable(key: str, value: str) -> bool:
    return (bool(key) and not key.startswith((":", "grpc-")) and key not in _NOT_METADATA
            and not key.endswith("-bin") and value.isascii() and value.isprintable())


class _StreamChannels:
    """Channels for streams, each carrying up to STREAMS_PER_CONNECTION at once."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._open: list[tuple[grpc.aio.Channel, list[int]]] = []

    def acquire(self) -> tuple[grpc.aio.Channel, list[int]]:
        for entry in self._open:
            if entry[1][0] < STREAMS_PER_CONNECTION:
                entry[1][0] += 1
                return entry
        entry = (self._make(), [1])
        self._open.append(entry)
        return entry

    async def release(self, entry: tuple[grpc.aio.Channel, list[int]]) -> None:
        """A stream on ``entry`` ended. A channel left with none is closed, except the
        last one (kept for the next stream): a burst of streams does not leave its
        connections open for ever."""
        entry[1][0] -= 1
        if entry[1][0] == 0 and len(self._open) > 1:
            self._open.remove(entry)
            await entry[0].close()

    async def close(self) -> None:
        for channel, _ in self._open:
            await channel.close()
        self._open.clear()


class GrpcBackend:
    def __init__(self, config: BackendConfig, tls: ClientTlsConfig | None = None) -> None:
        self.config = config
        self.tls = tls if tls is not None and tls.grpc else None
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.dialect: Dialect = dialect_for(config.binding, config.version)
        self._unary: grpc.aio.Channel | None = None
        self._streams = _StreamChannels(self._new_channel)

    def _new_channel(self) -> grpc.aio.Channel:
        backoff_ms = int(self.config.connect_timeout * 1000)
        options: list[tuple[str, Any]] = [
            # A backend that was down is retried soon, not after minutes of backoff.
            ("grpc.initial_reconnect_backoff_ms", min(200, backoff_ms)),
            ("grpc.max_reconnect_backoff_ms", backoff_ms),
            ("grpc.max_receive_message_length", self.config.max_answer_bytes),
            # Channels with the same arguments would otherwise share one connection.
            ("grpc.use_local_subchannel_pool", 1),
        ]
        if self.tls is not None:
            return grpc.aio.secure_channel(self.url, grpc_channel_credentials(self.tls),
                                           options=options + grpc_channel_options(self.tls))
        return grpc.aio.insecure_channel(self.url, options=options)

    def channel(self) -> grpc.aio.Channel:
        # Made on first use, inside the running loop, and kept until close().
        if self._unary is None:
            self._unary = self._new_channel()
        return self._unary

    def _metadata(self, call: Call) -> tuple[tuple[str, str], ...]:
        headers = backend_headers(call, self.config)
        if self.config.tenant and self.dialect.version != V10:
            # v0.3 messages have no tenant; a gateway behind us reads this key instead.
            headers[TENANT_KEY] = self.config.tenant
        return tuple((k.lower(), v) for k, v in headers.items() if _usable(k.lower(), v))


    def _error(self, call: Call, exc: grpc.aio.AioRpcError, seconds: float) -> A2AError:
        code = exc.code()
        message = exc.details() or ""
        details = next((v for k, v in exc.trailing_metadata() or ()
                        if k == STATUS_DETAILS_KEY and isinstance(v, bytes)), None)
        if details is None:
            # The transport's own statuses: what they say (addresses) stays in the log.
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                return backend_unavailable(call, self.config, message or code.name)
            if code is grpc.StatusCode.DEADLINE_EXCEEDED:
                return backend_timeout(call, self.config, seconds, "the answer")
            if code is grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in message:
                return too_large(call, self.config)
        return error_from_grpc(code.name, message, details)

    def _echo(self, call: Call, metadata: Any) -> None:
        for key, value in metadata or ():
            if key in ECHOED_HEADERS and isinstance(value, str):
                call.ctx.outcome.response_headers[key] = value

    async def _call(self, call: Call, out: WireRequest) -> bytes:
        """One unary call: the answer's bytes (its status raised as the error it names)."""
        timeout = call.ctx.remaining(self.config.timeout)
        rpc = self.channel().unary_unary(out.path)
        try:
            pending = rpc(out.body, timeout=timeout, metadata=self._metadata(call))
            raw: bytes = await pending
            self._echo(call, await pending.initial_metadata())
        except grpc.aio.AioRpcError as exc:
            raise self._error(call, exc, timeout) from None
        return raw

    async def unary(self, call: Call) -> ProtoMessage | None:
        codec = backend_codec(call, self)
        return codec.read(200, await self._call(call, codec.requests[0]))

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        """The client's own message bytes, to a backend of its dialect; its answer bytes
        as they come, its errors read as a translated call's are."""
        codec = backend_codec(call, self, forward=True)
        raw = await self._call(call, codec.requests[0])
        return passed_through(codec, 200, "application/grpc", raw)

    async def stream(self, call: Call) -> EventBatches:
        codec = backend_codec(call, self)
        out = codec.requests[0]
        reader = codec.events(self.config.max_answer_bytes)
        # A stream has no total deadline of its own, only the caller's, if any; its events
        # are bounded by the pipeline (first event, idle, total).
        deadline = (None if call.ctx.facts.deadline is None
                    else max(0.001, call.ctx.facts.deadline - time.monotonic()))
        entry = self._streams.acquire()
        pending = entry[0].unary_stream(out.path)(
            out.body, timeout=deadline, metadata=self._metadata(call))
        try:
            first = True
            while True:
                try:
                    raw = await pending.read()
                except grpc.aio.AioRpcError as exc:
                    raise self._error(call, exc, deadline or 0) from None
                if raw is grpc.aio.EOF:
                    return
                if first:
                    self._echo(call, await pending.initial_metadata())
                    first = False
                yield reader.feed(raw)  # one message, one event
        finally:
            # The client went away (or we failed): the backend call ends with us.
            pending.cancel()
            await self._streams.release(entry)

    async def close(self) -> None:
        if self._unary is not None:
            await self._unary.close()
            self._unary = None
        await self._streams.close()
