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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

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


@dataclass(frozen=True)
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
