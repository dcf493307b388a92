"""gRPC ingress: `lf.a2a.v1.A2AService` (v1.0) and `a2a.v1.A2AService` (v0.3) on one port.

Both services are generic handlers built from the method table (translators/dialects/
grpc.py): the package in the method path says the version (reference §6.1). Handlers get
and give bytes: the gRPC front door decodes them, so a request that does not parse is
answered in the client's dialect, and the client's dialect renders answers, events and
statuses (v1.0 ErrorInfo details / the v0.3 "<ErrorName>: " message).

A journaled stream's ids (docs/streams.md, "Resuming a stream") are our extension here,
gRPC having no per-message metadata: each event carries its own in its metadata
(:data:`EVENT_ID_KEY`), so that a client whose connection broke knows where it was; the
stream's end says the last one in trailing metadata (:data:`LAST_EVENT_ID`), the key a
client resumes with on SubscribeToTask or on its retried SendStreamingMessage.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import NoReturn

import grpc
from a2a.types import a2a_pb2 as pb
from grpc_reflection.v1alpha import reflection

from gateway.auth.peer import grpc_peer_cert
from gateway.call import Call, CallContext, ClientFacts, new_request_id
from gateway.ingress.common import bind, dialect_headers, split_extensions, valid_request_id
from gateway.ingress.connections import default_max_connections
from gateway.ingress.exit import refused, run_unary
from gateway.observability import tracing
from gateway.observability.logs import access
from gateway.pipeline.core import Gateway
from gateway.streams.detach import LeavesAtDrain, held
from gateway.streams.driver import drive
from gateway.streams.registry import Streams
from translators.dialects import grpc as wire
from translators.dialects.contract import Refusal
from translators.errors import A2AError
from translators.grpc_errors import STATUS_DETAILS_KEY, GrpcStatus
from translators.resume_marks import LAST_EVENT_ID, with_event_id
from translators.versions import V03, V10

Metadata = dict[str, list[str]]
Current = Callable[[], Gateway]


def _metadata(context: grpc.aio.ServicerContext) -> Metadata:
    """Text metadata by key; gRPC keys arrive lowercase."""
    out: Metadata = {}
    for key, value in context.invocation_metadata() or ():
        if isinstance(value, str):
            out.setdefault(key.lower(), []).append(value)
    return out


def _first(md: Metadata, key: str) -> str | None:
    values = md.get(key)
    return values[0] if values else None


def _context(gateway: Gateway, method: wire.WireMethod, md: Metadata,
             context: grpc.aio.ServicerContext) -> CallContext:
    rid = _first(md, "x-request-id")
    remaining = context.time_remaining()
    authenticates = gateway.auth is not None
    facts = ClientFacts(
        wire.GRPC, rid if rid is not None and valid_request_id(rid) else new_request_id(),
        {h: md[h][0] for h in gateway.config.forward_headers if h in md},
        split_extensions([*md.get("a2a-extensions", []), *md.get("x-a2a-extensions", [])]),
        deadline=time.monotonic() + remaining if remaining is not None else None,
        credentials=md if authenticates else {},
        peer_cert=grpc_peer_cert(context.auth_context()) if authenticates else None,
        resume_from=_first(md, LAST_EVENT_ID))
    ctx = CallContext(facts, method.version,
                      extension_header=wire.ROWS[method.version].extension_header)
    tracing.take_metadata(ctx, md)
    return ctx


def _decode(gateway: Gateway, method: wire.WireMethod, md: Metadata, ctx: CallContext,
            raw: bytes) -> tuple[Call, wire.GrpcClient] | tuple[A2AError, GrpcStatus]:
    """The call ``raw`` makes and its codec; or, refused (finished here, as every call
    is), the error and the status that answers it in the caller's dialect."""
    try:
        decoded = wire.decode_call(method, raw, _first(md, "a2a-version"),
                                   _first(md, wire.TENANT_KEY), gateway.version_rules,
                                   gateway.config.max_body_bytes)
    except Refusal as no:
        return no.error, refused(ctx, no)
    codec = decoded.codec
    assert isinstance(codec, wire.GrpcClient)
    return bind(ctx, decoded), codec


def _trailers(ctx: CallContext, last_id: str | None = None) -> list[tuple[str, str | bytes]]:
    """Request id, activated extensions and dropped fields, as trailing metadata; and a
    journaled stream's last event id."""
    trailers: list[tuple[str, str | bytes]] = [
        (k.lower(), v) for k, v in dialect_headers(ctx).items()
        if v.isascii() and v.isprintable()]
    if last_id is not None:
        trailers.append((LAST_EVENT_ID, last_id))
    return trailers


async def _abort(context: grpc.aio.ServicerContext, ctx: CallContext, err: A2AError,
                 status: GrpcStatus, last_id: str | None = None) -> NoReturn:
    trailers = _trailers(ctx, last_id)
    retry_after = err.metadata.get("retry_after")
    if retry_after is not None:
        trailers.append(("retry-after", str(retry_after)))
    if status.details is not None:
        trailers.append((STATUS_DETAILS_KEY, status.details))
    await context.abort(grpc.StatusCode[status.code], status.message, tuple(trailers))
    raise AssertionError("unreachable: abort raises")  # pragma: no cover


def _unary_handler(current: Current, method: wire.WireMethod,
                   ) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[bytes]]:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        gateway = current()
        md = _metadata(context)
        ctx = _context(gateway, method, md, context)
        out = b""
        try:
            decoded = _decode(gateway, method, md, ctx, raw)
            if isinstance(decoded[0], A2AError):
                await _abort(context, ctx, *decoded)
            call, codec = decoded
            answered = await run_unary(gateway, call, codec)
            if isinstance(answered, A2AError):
                await _abort(context, ctx, answered, codec.refusal(answered))
            out = answered.body
            context.set_trailing_metadata(tuple(_trailers(ctx)))
            return out
        finally:
            _access_line(ctx, context, len(raw), len(out))

    return handle


def _stream_handler(current: Current, method: wire.WireMethod, streams: Streams | None,
                    ) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[None]]:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> None:
        gateway = current()
        md = _metadata(context)
        ctx = _context(gateway, method, md, context)
        sent = [0]  # bytes of the events written, for the access line
        try:
            await _serve_stream(ctx, method, md, gateway, streams, raw, context, sent)
        finally:
            _access_line(ctx, context, len(raw), sent[0])

    return handle


async def _serve_stream(ctx: CallContext, method: wire.WireMethod, md: Metadata,
                        gateway: Gateway, streams: Streams | None, raw: bytes,
                        context: grpc.aio.ServicerContext, sent: list[int]) -> None:
    decoded = _decode(gateway, method, md, ctx, raw)
    if isinstance(decoded[0], A2AError):
        await _abort(context, ctx, *decoded)
    call, codec = decoded
    # A write is never cut by the shutdown's drain (Streams.uncut): the stream ends after it.
    uncut = streams.uncut if streams is not None else contextlib.nullcontext
    sink = _GrpcSink(call, codec, context, sent, uncut)
    journal = gateway.config.state.journal
    # At the drain a journaled stream whose task goes on ends for its client (status OK,
    # its last id in the trailers) and is read on into the journal, as SSE's does.
    await held(drive(call, gateway.stream(call), sink, streams, wire.GRPC,
                     leave=sink.leave if journal.holds else None), call, journal, sink)


class _GrpcSink(LeavesAtDrain):
    """Each event one gRPC message, written as it comes; the end a status (an error's in
    the client's dialect) with the call's trailers. At the drain it may end for its client
    first (:meth:`leave`; detach.EndsEarly), the driver reading on into the journal."""

    each_event = True
    # A shutdown before the first event ends the stream with its status, as after.
    answers_early_drain = False

    def __init__(self, call: Call, codec: wire.GrpcClient, context: grpc.aio.ServicerContext,
                 sent: list[int], uncut: Callable[[], AbstractContextManager[None]]) -> None:
        self.call, self.codec, self.context, self.sent = call, codec, context, sent
        # Each write is a step the shutdown's drain lets finish (a write cut half-done
        # leaves gRPC's core unable to send the status: the client then gets UNAVAILABLE
        # at the grace's end), and the stream ends (or leaves) after it.
        self.uncut = uncut
        self.opened = False
        self.frames: list[tuple[bytes, str | None]] = []  # and the event's id, if journaled
        self.last_id: str | None = None  # of the last event written
        LeavesAtDrain.__init__(self)  # the handler returns the status at the drain

    def frame(self, item: pb.StreamResponse, final: bool, event_id: str | None = None) -> None:
        if event_id is not None:
            item = with_event_id(item, event_id)
        self.frames.append((self.codec.event_frame(item, final, self.call.ctx.loss), event_id))

    async def end_for_client(self) -> None:
        """The drain's end for the client: status OK with the trailers, the last id
        written among them (what the client resumes from)."""
        self.context.set_trailing_metadata(tuple(_trailers(self.call.ctx, self.last_id)))

    async def flush(self, due: bool) -> None:
        frames = self.frames
        while frames:
            if self.left:  # the journal has them; the client resumes from its last id
                frames.clear()
                return
            frame, event_id = frames.pop(0)
            self.opened = True
            self.sent[0] += len(frame)  # bytes of the events written, for the access line
            with self.uncut():
                self.writing = True
                try:
                    await self.context.write(frame)
                except grpc.aio.BaseError as exc:
                    # The call is over for its client (it cancelled, its connection
                    # broke): the driver then reads on for the journal, if it holds.
                    raise ConnectionError(f"the gRPC client is gone: {exc!r}") from None
                else:
                    if event_id is not None:
                        self.last_id = event_id
                finally:
                    self.wrote()

    def keeps(self) -> bool:
        return False  # each event is written as it comes

    async def fail(self, err: A2AError) -> None:
        if self.left:  # its client has had its end
            return
        await _abort(self.context, self.call.ctx, err, self.codec.refusal(err), self.last_id)

    async def finish(self) -> None:
        if self.left:
            return
        # The end: the drain (if any) is over, what is framed goes out whole.
        self.uncut = contextlib.nullcontext
        await self.flush(True)
        self.context.set_trailing_metadata(tuple(_trailers(self.call.ctx, self.last_id)))

    def drop(self) -> None:  # writes are not bounded here: gRPC's own flow control is
        pass

    def result(self) -> None:
        return None


def _access_line(ctx: CallContext, context: grpc.aio.ServicerContext, bytes_in: int,
                 bytes_out: int) -> None:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        name = code.name
    else:  # not aborted: OK, or cancelled (the client left, or the server's stop)
        name = "CANCELLED" if isinstance(ctx.error, asyncio.CancelledError) else "OK"
    access.write(ctx, access.grpc_peer(context.peer()), None, bytes_in, bytes_out,
                 time.monotonic() - ctx.facts.started, grpc_code=name)


def generic_handlers(current: Current, streams: Streams | None = None,
                     ) -> list[grpc.GenericRpcHandler]:
    """One generic handler per service, both driven by the operation table."""
    handlers: list[grpc.GenericRpcHandler] = []
    for version in (V10, V03):
        table: dict[str, grpc.RpcMethodHandler] = {}
        for name, method in wire.wire_methods(version).items():
            # No (de)serializers: handlers get and give bytes, and decode errors are ours.
            if method.streaming:
                table[name] = grpc.unary_stream_rpc_method_handler(
                    _stream_handler(current, method, streams))
            else:
                table[name] = grpc.unary_unary_rpc_method_handler(
                    _unary_handler(current, method))
        handlers.append(grpc.method_handlers_generic_handler(wire.SERVICES[version], table))
    return handlers


async def start_grpc_server(current: Current, listen: str, streams: Streams | None = None,
                            credentials: grpc.ServerCredentials | None = None,
                            reuse_port: bool = False) -> grpc.aio.Server:
    """Serve both services (and server reflection, unless turned off) on ``listen``
    (host:port), over TLS with ``credentials``. Open streams are tracked in ``streams``,
    so that shutdown can end them cleanly. ``reuse_port``: the workers of one gateway
    share the port (README "Workers")."""
    config = current().config
    max_bytes = config.max_body_bytes
    limits = config.limits
    max_connections = limits.grpc_max_connections or max(
        16, (limits.max_connections or default_max_connections()) // 4)
    server = grpc.aio.server(options=[
        # Alone, a port in use is an error, not a shared listener.
        ("grpc.so_reuseport", int(reuse_port)),
        # Messages up to max_body_bytes are read; larger ones, up to twice that, are refused
        # by the handler in the caller's dialect; beyond, by gRPC itself (no details).
        ("grpc.max_receive_message_length", 2 * max_bytes),
        ("grpc.max_send_message_length", max(max_bytes, 64 * 1024 * 1024)),
        ("grpc.max_concurrent_streams", limits.grpc_max_streams_per_connection),
        # Past the cap new connections are closed at once; silent ones are closed after
        # the handshake deadline, idle ones after the idle timeout.
        ("grpc.max_allowed_incoming_connections", max_connections),
        ("grpc.server_handshake_timeout_ms", int(limits.header_timeout * 1000)),
        ("grpc.max_connection_idle_ms", int(limits.idle_timeout * 1000)),
    ])
    server.add_generic_rpc_handlers(generic_handlers(current, streams))
    if config.listen.grpc_reflection:
        reflection.enable_server_reflection(
            (*wire.SERVICES.values(), reflection.SERVICE_NAME), server)
    try:
        port = (server.add_secure_port(listen, credentials) if credentials is not None
                else server.add_insecure_port(listen))
    except RuntimeError as exc:
        raise OSError(f"cannot listen for gRPC on {listen}: {exc}") from None
    if port == 0:
        raise OSError(f"cannot listen for gRPC on {listen}")
    await server.start()
    return server
