"""The gRPC dialects: binding GRPC, versions 0.3 and 1.0 (reference §6).

Both services can share one port: the package in the method path (`lf.a2a.v1` or
`a2a.v1`) names the version, so no metadata is needed to pick a schema (§6.2). The
method table is read from the two generated file descriptors and keyed on the operation
table. v1.0 bytes are the canonical messages; v0.3 bytes go through the P03 translator.
Errors are a status and message: v1.0 adds a google.rpc.Status with an ErrorInfo, v0.3
prefixes the message with the error's name (grpc_errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any, Final

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf import message_factory
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.dialects.base import (
    DecodedCall,
    WireAnswer,
    WireRequest,
    backend_answer,
    backend_event,
    check_backend_card,
    client_request,
    has_tenant,
    refuse_losses,
)
from translators.dialects.contract import JSON_MEDIA, Refusal
from translators.errors import A2AError, a2a_error
from translators.grpc_errors import GrpcStatus, error_to_grpc
from translators.loss import LossReport
from translators.p03 import objects as p03_objects
from translators.p03 import requests as p03
from translators.p03.common import BytesMode
from translators.tenancy import request_tenant
from translators.versions import (
    V03,
    V10,
    Version,
    VersionRules,
    is_major_1,
    negotiate,
    normalize_version,
)

GRPC: Final = "GRPC"
SERVICES = {V10: "lf.a2a.v1.A2AService", V03: "a2a.v1.A2AService"}
# v0.3 requests have no tenant field: a gRPC client names its tenant in this metadata key
# (v1.0 clients may too, when their request's `tenant` is empty).
TENANT_KEY = "x-a2a-tenant"
_FILES: dict[Version, FileDescriptor] = {V10: pb.DESCRIPTOR, V03: v03pb.DESCRIPTOR}


@dataclass(frozen=True)
class WireMethod:
    """One method of one version's A2AService and the operation it carries."""

    op: ops.Operation
    version: Version
    name: str
    request: type[ProtoMessage]
    response: type[ProtoMessage]  # google.protobuf.Empty for the delete
    streaming: bool
    path: str  # the full method path, /<service>/<name>


def _method_name(op: ops.Operation, version: str) -> str | None:
    return op.name if version == V10 else op.grpc_v03


@cache
def wire_methods(version: Version) -> dict[str, WireMethod]:
    """Every method of the version's service by name; checks the table against the proto."""
    service = _FILES[version].services_by_name["A2AService"]
    out: dict[str, WireMethod] = {}
    for op in ops.OPERATIONS:
        name = _method_name(op, version)
        if name is None:
            continue
        desc = service.methods_by_name[name]
        out[name] = WireMethod(op, version, name,
                               message_factory.GetMessageClass(desc.input_type),
                               message_factory.GetMessageClass(desc.output_type),
                               desc.server_streaming, f"/{SERVICES[version]}/{name}")
    missing = {m.name for m in service.methods} - set(out)
    assert not missing, f"operations table lacks {SERVICES[version]} methods {missing}"
    return out


def wire_method(op: ops.Operation, version: Version) -> WireMethod:
    """The method that carries ``op`` in ``version``; UnsupportedOperationError if none."""
    name = _method_name(op, version)
    if name is None:
        raise ops.not_in_v03(op.name)
    return wire_methods(version)[name]


def parse_message(cls: type[ProtoMessage], raw: bytes, error: str, what: str) -> ProtoMessage:
    msg = cls()
    try:
        msg.ParseFromString(raw)
    except DecodeError as exc:
        raise a2a_error(error, f"{what} is not a valid {cls.DESCRIPTOR.full_name}: {exc}",
                        ) from None
    # Fields a newer peer sent that this schema lacks are ignored (spec §5.7), never
    # passed on to a peer whose parser may be strict.
    msg.DiscardUnknownFields()
    return msg


def _bytes(msg: ProtoMessage) -> bytes:
    out: bytes = msg.SerializeToString()
    return out


class GrpcDialect:
    """gRPC of one version; the version-specific pieces are the subclasses'."""

    binding: Final = GRPC
    version: Version
    extension_header = ""  # metadata keys are lowercase

    def _request_in(self, method: WireMethod, msg: ProtoMessage,
                    loss: LossReport) -> ProtoMessage:
        raise NotImplementedError

    def _request_out(self, method: WireMethod, request: ProtoMessage,
                     loss: LossReport) -> ProtoMessage:
        raise NotImplementedError

    def _answer_in(self, method: WireMethod, msg: ProtoMessage,
                   loss: LossReport) -> ProtoMessage | None:
        raise NotImplementedError

    def _answer_out(self, method: WireMethod, result: ProtoMessage,
                    loss: LossReport) -> ProtoMessage | None:
        raise NotImplementedError

    def _event_in(self, msg: ProtoMessage, loss: LossReport) -> pb.StreamResponse:
        raise NotImplementedError

    def _event_out(self, item: pb.StreamResponse, final: bool,
                   loss: LossReport) -> ProtoMessage:
        raise NotImplementedError

    # ------------------------------------------------------------ client side

    def decode_request(self, method: WireMethod, raw: bytes, loss: LossReport) -> ProtoMessage:
        msg = parse_message(method.request, raw, "InvalidRequestError", "the request")
        return self._request_in(method, msg, loss)

    def client(self, op: ops.Operation | None, request_id: str | int | None = None,
               media_type: str = JSON_MEDIA) -> GrpcClient:
        """One call's client side: its answer is the response message of the method that
        carries ``op`` (gRPC has no request id or media type to keep)."""
        return GrpcClient(self, op)

    def encode_answer(self, method: WireMethod, result: ProtoMessage | None,
                      loss: LossReport) -> bytes:
        if result is None:
            return b""  # google.protobuf.Empty
        loss.answering = True
        out = self._answer_out(method, result, loss)
        return b"" if out is None else _bytes(out)

    def event_frame(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> bytes:
        """One event for a client; ``final`` is v0.3's flag (the stream encoder decides)."""
        loss.answering = True
        return _bytes(self._event_out(item, final, loss))

    # ------------------------------------------------------------ backend side

    def backend(self, op: ops.Operation, request: ProtoMessage, loss: LossReport,
                tenant: str | None = None, card: dict[str, Any] | None = None,
                extensions: Sequence[str] = (), *, subscribe_verb: str = "POST",
                wire: WireRequest | None = None) -> GrpcBackend:
        """One call toward a backend (contract.Dialect.backend): the method's path and
        the message bytes, with the backend's own tenant (v0.3 messages have none), or
        the client's own bytes (``wire``)."""
        method = wire_method(op, self.version)
        if wire is not None:
            return GrpcBackend(self, method, request, loss,
                               (WireRequest(wire.body, path=method.path),))
        check_backend_card(op, request, card, extensions)
        if self.version != V10 or not has_tenant(type(request)):
            payload = _bytes(self._request_out(method, request, loss))
        else:
            carrier: Any = request
            own = carrier.tenant
            carrier.tenant = tenant or ""
            try:
                payload = _bytes(self._request_out(method, request, loss))
            finally:
                carrier.tenant = own
        refuse_losses(loss)
        return GrpcBackend(self, method, request, loss, (WireRequest(payload, path=method.path),))


@dataclass(slots=True)  # not frozen: built per call (contract.WireRequest)
class GrpcBackend:
    """One gRPC call's backend side (a BackendCodec): the method it calls, whose
    response message its answer and events are read as. Its errors are statuses
    (grpc_errors.error_from_grpc), not answers."""

    dialect: GrpcDialect
    method: WireMethod
    request: ProtoMessage
    loss: LossReport
    requests: tuple[WireRequest, ...]

    def read(self, status: int, raw: bytes) -> ProtoMessage | None:
        method, loss = self.method, self.loss
        msg = parse_message(method.response, raw, "InvalidAgentResponseError",
                            "the backend's answer")
        if method.op.response is None:
            return None  # the delete's Empty
        return backend_answer(self.request, loss,
                              lambda: self.dialect._answer_in(method, msg, loss))

    def events(self, max_event_bytes: int) -> GrpcEventReader:
        return GrpcEventReader(self.dialect, self.loss, self.request)

    def forwarded(self, status: int, content_type: str, raw: bytes) -> WireAnswer | None:
        """Bytes that parse as the method's response message."""
        try:
            message: ProtoMessage = self.method.response.FromString(raw)
        except DecodeError:
            return None
        return WireAnswer(raw, document=message)


class GrpcEventReader:
    """A backend's server stream: each chunk is one message, one event."""

    def __init__(self, dialect: GrpcDialect, loss: LossReport, request: ProtoMessage) -> None:
        self._dialect, self._loss, self._request = dialect, loss, request
        self._cls = wire_methods(dialect.version)["SendStreamingMessage"].response

    def feed(self, chunk: bytes) -> tuple[pb.StreamResponse]:
        msg = parse_message(self._cls, chunk, "InvalidAgentResponseError",
                            "a stream event from the backend")
        return (backend_event(self._request, self._loss,
                              lambda: self._dialect._event_in(msg, self._loss)),)

    def close(self) -> tuple[()]:
        return ()


@dataclass(frozen=True, slots=True)
class GrpcClient:
    """One gRPC call's client side (a ClientCodec): the answer is the method's response
    message; an error, before or after the first event, is the call's status."""

    dialect: GrpcDialect
    op: ops.Operation | None

    def answer(self, result: ProtoMessage | None, loss: LossReport) -> bytes:
        assert self.op is not None
        return self.dialect.encode_answer(wire_method(self.op, self.dialect.version), result,
                                          loss)

    def event_frame(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> bytes:
        return self.dialect.event_frame(item, final, loss)

    def refusal(self, err: A2AError) -> GrpcStatus:
        return error_to_grpc(err, self.dialect.version)


class Grpc10(GrpcDialect):
    version = V10
    extension_header = "a2a-extensions"

    def _request_in(self, method: WireMethod, msg: ProtoMessage,
                    loss: LossReport) -> ProtoMessage:
        return msg

    def _request_out(self, method: WireMethod, request: ProtoMessage,
                     loss: LossReport) -> ProtoMessage:
        return request

    def _answer_in(self, method: WireMethod, msg: ProtoMessage,
                   loss: LossReport) -> ProtoMessage | None:
        return msg

    def _answer_out(self, method: WireMethod, result: ProtoMessage,
                    loss: LossReport) -> ProtoMessage | None:
        return result

    def _event_in(self, msg: ProtoMessage, loss: LossReport) -> pb.StreamResponse:
        assert isinstance(msg, pb.StreamResponse)
        return msg

    def _event_out(self, item: pb.StreamResponse, final: bool,
                   loss: LossReport) -> ProtoMessage:
        return item


class Grpc03(GrpcDialect):
    version = V03
    extension_header = "x-a2a-extensions"

    def __init__(self, decode_bytes: BytesMode = "auto", encode_bytes: BytesMode = "double",
                 ) -> None:
        self.decode_bytes, self.encode_bytes = decode_bytes, encode_bytes

    def _request_in(self, method: WireMethod, msg: ProtoMessage,
                    loss: LossReport) -> ProtoMessage:
        return p03.request_to_p10(method.op.name, msg, loss, bytes_mode=self.decode_bytes)

    def _request_out(self, method: WireMethod, request: ProtoMessage,
                     loss: LossReport) -> ProtoMessage:
        return p03.request_to_p03(method.op.name, request, loss, bytes_mode=self.encode_bytes)

    def _answer_in(self, method: WireMethod, msg: ProtoMessage,
                   loss: LossReport) -> ProtoMessage | None:
        return p03.response_to_p10(method.op.name, msg, loss, bytes_mode=self.decode_bytes)

    def _answer_out(self, method: WireMethod, result: ProtoMessage,
                    loss: LossReport) -> ProtoMessage | None:
        return p03.response_to_p03(method.op.name, result, loss, bytes_mode=self.encode_bytes)

    def _event_in(self, msg: ProtoMessage, loss: LossReport) -> pb.StreamResponse:
        assert isinstance(msg, v03pb.StreamResponse)
        return p03_objects.stream_response_to_p10(msg, "", loss, bytes_mode=self.decode_bytes)

    def _event_out(self, item: pb.StreamResponse, final: bool,
                   loss: LossReport) -> ProtoMessage:
        return p03_objects.stream_response_to_p03(item, final, "", loss,
                                                  bytes_mode=self.encode_bytes)


GRPC_V10 = Grpc10()
GRPC_V03 = Grpc03()
# This binding\'s two rows of the registry (translators/dialects/__init__.py).
ROWS: Mapping[Version, GrpcDialect] = MappingProxyType({V10: GRPC_V10, V03: GRPC_V03})


def rc_refusal(header: str) -> A2AError:
    return a2a_error(
        "VersionNotSupportedError",
        f"a2a.v1.A2AService called with a2a-version {header[:32]}: that is the A2A "
        f"v1.0.0-rc protocol (package a2a.v1 with v1.0 messages), which this gateway does "
        f"not serve. v1.0 clients call lf.a2a.v1.A2AService; v0.3 clients send a2a-version "
        f"0.3 or none", requested=header[:32])


def decode_call(method: WireMethod, raw: bytes, declared: str | None, md_tenant: str | None,
                rules: VersionRules, max_bytes: int) -> DecodedCall[GrpcStatus]:
    """A client's gRPC call, decoded: the negotiated version, the canonical request,
    checked, and its tenant (field or `x-a2a-tenant` metadata). Refusal otherwise."""
    dialect = ROWS[method.version]
    if method.version == V03 and is_major_1(normalize_version(declared)):
        # An `a2a.v1` caller that speaks 1.x is a v1.0.0-rc peer: its bytes have yet
        # another numbering (reference §6.5). It reads errors the v1.0 way.
        raise Refusal(rc_refusal(declared or "1.x"), GRPC_V10.client(method.op))
    try:
        negotiate(declared, method.version, rules)
        if len(raw) > max_bytes:
            raise a2a_error("PayloadTooLargeError", f"the request message is larger than "
                            f"{max_bytes} bytes (max_body_bytes)", limit=max_bytes)
        loss = LossReport()
        request = client_request(method.op, lambda: dialect.decode_request(method, raw, loss))
        tenant = request_tenant(request, md_tenant, "x-a2a-tenant metadata")
    except A2AError as err:
        raise Refusal(err, dialect.client(method.op), method.op) from None
    return DecodedCall(method.op, dialect, dialect.client(method.op), request, loss, tenant,
                       WireRequest(raw))
