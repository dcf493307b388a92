"""The gRPC dialects: services, methods and message bytes of v0.3 and v1.0 (reference §6).

Both services can share one port: the package in the method path (`lf.a2a.v1` or
`a2a.v1`) names the version, so no metadata is needed to pick a schema (§6.2). The
method table is read from the two generated file descriptors and keyed on the
operation table. v1.0 bytes are the canonical messages; v0.3 bytes go through the P03
translator (`translators/p03/`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf import message_factory
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import A2AError, a2a_error
from translators.loss import LossReport
from translators.p03 import objects as p03_objects
from translators.p03 import requests as p03
from translators.protojson import reclassify
from translators.versions import V03, V10

GRPC = "GRPC"
SERVICES = {V10: "lf.a2a.v1.A2AService", V03: "a2a.v1.A2AService"}
VERSION_OF_SERVICE = {service: version for version, service in SERVICES.items()}
# v0.3 requests have no tenant field: a gRPC client names its tenant in this metadata key
# (v1.0 clients may too, when their request's `tenant` is empty).
TENANT_KEY = "x-a2a-tenant"
_FILES: dict[str, FileDescriptor] = {V10: pb.DESCRIPTOR, V03: v03pb.DESCRIPTOR}


@dataclass(frozen=True)
class WireMethod:
    """One method of one version's A2AService and the operation it carries."""

    op: ops.Operation
    version: str
    name: str
    request: type[ProtoMessage]
    response: type[ProtoMessage]  # google.protobuf.Empty for the delete
    streaming: bool

    @property
    def service(self) -> str:
        return SERVICES[self.version]

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"


def _method_name(op: ops.Operation, version: str) -> str | None:
    return op.name if version == V10 else op.grpc_v03


@cache
def wire_methods(version: str) -> dict[str, WireMethod]:
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
                               desc.server_streaming)
    missing = {m.name for m in service.methods} - set(out)
    assert not missing, f"operations table lacks {SERVICES[version]} methods {missing}"
    return out


def wire_method(op: ops.Operation, version: str) -> WireMethod:
    """The method that carries ``op`` in ``version``; UnsupportedOperationError if none."""
    name = _method_name(op, version)
    if name is None:
        raise a2a_error("UnsupportedOperationError",
                        f"{op.name} does not exist in A2A v0.3 and the backend speaks v0.3")
    return wire_methods(version)[name]


# ---------------------------------------------------------------- message bytes


def _parse(cls: type[ProtoMessage], raw: bytes, error: str, what: str) -> ProtoMessage:
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


def request_to_canonical(method: WireMethod, raw: bytes, loss: LossReport,
                         **p03_options: Any) -> ProtoMessage:
    """What a client sent, as the operation's v1.0 request."""
    msg = _parse(method.request, raw, "InvalidRequestError", "the request")
    if method.version == V10:
        return msg
    return p03.request_to_p10(method.op.name, msg, loss, **p03_options)


def request_from_canonical(method: WireMethod, request: ProtoMessage, loss: LossReport,
                           **p03_options: Any) -> bytes:
    if method.version == V10:
        return _bytes(request)
    return _bytes(p03.request_to_p03(method.op.name, request, loss, **p03_options))


def response_to_canonical(method: WireMethod, raw: bytes, loss: LossReport,
                          request: ProtoMessage, **p03_options: Any) -> ProtoMessage | None:
    """A backend's answer as the canonical response (None for the delete's Empty). Shape
    errors are the backend's (InvalidAgentResponseError), never the client's."""
    msg = _parse(method.response, raw, "InvalidAgentResponseError", "the backend's answer")
    loss.answering = True
    if method.op.response is None:
        return None
    if method.version == V10:
        return msg
    try:
        result = p03.response_to_p10(method.op.name, msg, loss, **p03_options)
    except A2AError as err:
        raise reclassify(err) from None
    return None if result is None else p03.strip_history(result, request)


def response_from_canonical(method: WireMethod, result: ProtoMessage | None,
                            loss: LossReport, **p03_options: Any) -> bytes:
    if result is None:
        return b""  # google.protobuf.Empty
    loss.answering = True
    if method.version == V10:
        return _bytes(result)
    out = p03.response_to_p03(method.op.name, result, loss, **p03_options)
    return b"" if out is None else _bytes(out)


def stream_item_to_canonical(version: str, raw: bytes, loss: LossReport,
                             request: ProtoMessage, **p03_options: Any) -> pb.StreamResponse:
    cls = wire_methods(version)["SendStreamingMessage"].response
    msg = _parse(cls, raw, "InvalidAgentResponseError", "a stream event from the backend")
    loss.answering = True
    if version == V10:
        assert isinstance(msg, pb.StreamResponse)
        return msg
    assert isinstance(msg, v03pb.StreamResponse)
    try:
        item = p03_objects.stream_response_to_p10(msg, "", loss, **p03_options)
    except A2AError as err:
        raise reclassify(err) from None
    return p03.strip_history(item, request)


def stream_item_from_canonical(version: str, item: pb.StreamResponse, final: bool,
                               loss: LossReport, **p03_options: Any) -> bytes:
    """One event for a client; ``final`` is v0.3's flag (the stream encoder decides it)."""
    loss.answering = True
    if version == V10:
        return _bytes(item)
    return _bytes(p03_objects.stream_response_to_p03(item, final, "", loss, **p03_options))
