"""The contract every dialect row keeps, as types: what the gateway may call on a dialect,
on one call's client side, and what a refused call carries.

Six rows — {JSON-RPC, HTTP+JSON, gRPC} x {v0.3, v1.0} — implement the same methods with
the same signatures (after grpc-gateway's marshaler contract). What differs per binding
(the JSON-RPC id, the REST media type, the gRPC method) lives in one call's codec object,
not in the arguments, so the gateway's seams hold a typed value instead of ``Any`` and
the strict type check sees every codec call.

The one thing that differs in kind is how an error is written before the first byte: an
HTTP answer (JSON-RPC, HTTP+JSON) or a gRPC status. ``ClientCodec`` is generic in it;
streams over SSE can also write an error as one more frame (``SseClientCodec``).

The backend side is the same idea turned around: ``dialect.backend(...)`` encodes one call
for a backend of the row's dialect and hands back a ``BackendCodec`` that holds what its
answer is read against (the JSON-RPC id sent, REST's route tries, the gRPC method), so the
egress and the doctor send ``requests`` and call ``read``/``events``/``forwarded`` the
same way on all six rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators.errors import A2AError
from translators.loss import LossReport
from translators.operations import Operation
from translators.versions import Version

Binding = Literal["JSONRPC", "HTTP+JSON", "GRPC"]
BINDINGS: tuple[Binding, ...] = ("JSONRPC", "HTTP+JSON", "GRPC")

JSON_MEDIA = "application/json"
# How a call refused before its first byte is answered: an HTTP answer or a gRPC status.
ErrorAnswer = TypeVar("ErrorAnswer", covariant=True)


class Dialect(Protocol):
    """One row of the registry (translators/dialects/__init__.py): which binding and
    version it speaks, and how that version names the extensions header."""

    @property
    def binding(self) -> Binding: ...

    @property
    def version(self) -> Version: ...

    @property
    def extension_header(self) -> str: ...

    def client(self, op: Operation | None, request_id: str | int | None = None,
               media_type: str = JSON_MEDIA) -> ClientCodec[object]:
        """One call's client side. ``op`` is None for a refusal before the operation was
        known; ``request_id`` is JSON-RPC's, ``media_type`` HTTP+JSON's (each binding
        keeps what it needs)."""
        ...

    def backend(self, op: Operation, request: ProtoMessage, loss: LossReport,
                tenant: str | None = None, card: dict[str, Any] | None = None,
                extensions: Sequence[str] = (), *, subscribe_verb: str = "POST",
                wire: WireRequest | None = None) -> BackendCodec:
        """One call toward a backend of this dialect, encoded: ``tenant`` is the backend's
        own (the client's picked the backend); refused (A2AError) when the backend's
        ``card`` rules the call out, when this version cannot express it, or when it lost
        fields under `loss_policy: reject`. ``subscribe_verb`` is HTTP+JSON's (peers
        disagree on it). With ``wire`` (the client's own request, same dialect on both
        sides) nothing is encoded or checked: it is sent as it came, and its answer is
        read against it (JSON-RPC: the client's id)."""
        ...


class ClientCodec(Protocol[ErrorAnswer]):
    """One call's client side: its answer, its stream events and a refusal, written in
    the dialect the client spoke (the binding's per-call state is the codec's)."""

    @property
    def dialect(self) -> Dialect: ...

    def answer(self, result: ProtoMessage | None, loss: LossReport) -> bytes:
        """The call's result (None: an empty one) as the body the client reads."""
        ...

    def event_frame(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> bytes:
        """One stream event as written to the client; ``final`` is v0.3's last-event flag
        (the stream decides it)."""
        ...

    def refusal(self, err: A2AError) -> ErrorAnswer:
        """The error as the call's whole answer (nothing else was written)."""
        ...


# WireRequest and WireAnswer are built once or twice per call, the backend codecs once:
# plain slotted dataclasses, whose __init__ costs a quarter of a frozen one's (fields set
# with object.__setattr__). Nothing changes them after they are built.
@dataclass(slots=True)
class WireRequest:
    """A request as its dialect carries it: what a client sent (for a backend of the same
    dialect), or what a BackendCodec sends. JSON-RPC: the whole document, and its id;
    gRPC: the message bytes (a backend codec's also the method path); HTTP+JSON: the
    body (b"": none), the verb, the route's path (a client's below any tenant prefix, a
    backend codec's below the backend's base) and the query."""

    body: bytes
    verb: str = "POST"
    path: str = ""
    query: tuple[tuple[str, str], ...] = ()
    rpc_id: str | int | None = None  # JSON-RPC: the id the client gave


@dataclass(slots=True)
class WireAnswer:
    """A backend's answer, passed through as it came (same dialect on both sides), and
    what the gateway read of it when it checked it (the JSON document, or the gRPC
    message): the task index takes its tasks from that instead of reading it again."""

    body: bytes
    status: int = 200
    document: Any = None


class EventReader(Protocol):
    """A backend's event stream, fed as it arrives: over SSE a chunk is any bytes of the
    body; over gRPC a chunk is one message. ``feed`` returns the events the chunk
    completed (false when none), each read as one canonical StreamResponse; a backend's
    error event raises its A2AError when it is reached."""

    def feed(self, chunk: bytes) -> Iterable[pb.StreamResponse]: ...

    def close(self) -> Iterable[pb.StreamResponse]: ...


class BackendCodec(Protocol):
    """One call's backend side (``Dialect.backend``): what to send, and how its answer,
    its events and a pass-through answer read. Errors are raised as A2AError, the
    backend's own by their name, a malformed answer as InvalidAgentResponseError."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def requests(self) -> Sequence[WireRequest]:
        """What to send, in order: one request, except HTTP+JSON's subscribe, which tries
        the other verb when the first is answered 405. JSON-RPC's is POSTed to the
        backend's URL, HTTP+JSON's path is below its base, gRPC's path is the method's."""
        ...

    def read(self, status: int, raw: bytes) -> ProtoMessage | None:
        """The backend's answer (``status``: the HTTP status; gRPC: 200, its errors
        arrive as a status, grpc_errors.error_from_grpc) as the canonical response,
        None for an empty one."""
        ...

    def events(self, max_event_bytes: int) -> EventReader:
        """A reader for the backend's event stream (``max_event_bytes`` bounds one SSE
        event; gRPC's channel bounds its messages)."""
        ...

    def forwarded(self, status: int, content_type: str, raw: bytes) -> WireAnswer | None:
        """A same-dialect backend's answer as it came, when it may reach the client so:
        a success that parses as this dialect's answer. None for errors and answers that
        are wrong: they are read (``read``) the translated way, so they are checked,
        logged and counted alike."""
        ...


@dataclass(slots=True)  # not frozen: one per call (see WireRequest above)
class HttpAnswer:
    """An answer for an HTTP client: status, body, and the headers that go with it."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = JSON_MEDIA


class SseClientCodec(ClientCodec[HttpAnswer], Protocol):
    """A client side whose stream is SSE: an error after the first event is one more frame."""

    def error_frame(self, err: A2AError) -> bytes: ...


class Refusal(Exception, Generic[ErrorAnswer]):
    """A client's call refused before it ran (the one class for all six rows): the error,
    the codec that writes it in the caller's dialect, the operation when it was known, and
    response headers the refusal needs besides (REST's `Allow`)."""

    def __init__(self, error: A2AError, codec: ClientCodec[ErrorAnswer],
                 op: Operation | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(error.message)
        self.error, self.codec, self.op = error, codec, op
        self.headers = headers or {}

    def answer(self) -> ErrorAnswer:
        return self.codec.refusal(self.error)
