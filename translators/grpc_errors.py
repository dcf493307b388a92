"""Errors on the gRPC binding: rendering them and reading them back (reference §6.4, §7).

v1.0 peers get the status code of the v1.0.1 table and a google.rpc.Status with an
ErrorInfo in the ``grpc-status-details-bin`` trailer. v0.3 peers (a2a-sdk 0.3.x) get the
status of their own table (§7.3) and the message ``"<ErrorName>: <message>"``, which
their client splits on ``": "``. Inbound errors are classified by ErrorInfo reason first,
then by that name prefix, and only then by the status code.

Status codes are google.rpc.Code names (``"NOT_FOUND"``); grpc.StatusCode members have
the same names, so the I/O side maps them with ``grpc.StatusCode[name]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2

from translators.errors import A2A_DOMAIN, BY_NAME, BY_REASON, GATEWAY_DOMAIN, A2AError, a2a_error
from translators.versions import V10

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class GrpcStatus:
    """One error as a gRPC peer sees it."""

    code: str  # google.rpc.Code name
    message: str  # the status message ("details" in grpcio)
    details: bytes | None = None  # serialized google.rpc.Status for STATUS_DETAILS_KEY


def code_number(name: str) -> int:
    return int(code_pb2.Code.Value(name))


def status_proto(err: A2AError) -> status_pb2.Status:
    """google.rpc.Status with the ErrorInfo (spec@v1.0.1 §10.6); its code and message are
    the ones on the wire, which the v1.0 SDK client checks."""
    info = error_details_pb2.ErrorInfo(reason=err.kind.reason, domain=err.kind.domain,
                                       metadata={k: str(v) for k, v in err.metadata.items()})
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(code=code_number(err.kind.grpc), message=err.message,
                             details=[detail])


def error_to_grpc_v10(err: A2AError) -> GrpcStatus:
    return GrpcStatus(err.kind.grpc, err.message, status_proto(err).SerializeToString())


def v03_error_name(err: A2AError) -> str:
    return err.kind.v03_name or err.kind.name


def error_to_grpc_v03(err: A2AError) -> GrpcStatus:
    return GrpcStatus(err.kind.v03_grpc or err.kind.grpc, f"{v03_error_name(err)}: {err.message}")


def error_to_grpc(err: A2AError, version: str) -> GrpcStatus:
    return error_to_grpc_v10(err) if version == V10 else error_to_grpc_v03(err)


# ---------------------------------------------------------------- reading them back

# What a status code means when nothing better is known. The v1.0.1 table shares
# FAILED_PRECONDITION among six errors and v0.3 peers share UNIMPLEMENTED among four
# (§7.3), so FAILED_PRECONDITION stays unclassified and UNIMPLEMENTED, which v1.0.0 and
# v0.3 peers (and gRPC itself, for unknown methods) answer for what they do not offer,
# reads as UnsupportedOperationError. One table serves both versions.
_BY_CODE = {"NOT_FOUND": "TaskNotFoundError", "INVALID_ARGUMENT": "InvalidParamsError",
            "INTERNAL": "InternalError", "UNIMPLEMENTED": "UnsupportedOperationError",
            "UNAVAILABLE": "BackendUnavailableError", "CANCELLED": "BackendUnavailableError",
            "DEADLINE_EXCEEDED": "BackendTimeoutError"}


def error_info_of(details: bytes | None) -> tuple[A2AError | None, str]:
    """The A2A error named by the ErrorInfo in a serialized google.rpc.Status, and the
    status message it carries ('' if none)."""
    if not details:
        return None, ""
    try:
        status = status_pb2.Status.FromString(details)
    except DecodeError:
        return None, ""
    for detail in status.details:
        if not detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            continue
        info = error_details_pb2.ErrorInfo()
        detail.Unpack(info)
        kind = BY_REASON.get(info.reason)
        if kind is not None and info.domain in (A2A_DOMAIN, GATEWAY_DOMAIN, ""):
            return A2AError(kind, status.message, dict(info.metadata)), status.message
    return None, status.message


def error_from_prefix(message: str) -> A2AError | None:
    """``"TaskNotFoundError: Task not found"`` → TaskNotFoundError("Task not found")."""
    name, sep, rest = message.partition(": ")
    kind = BY_NAME.get(name) if sep else None
    return A2AError(kind, rest) if kind is not None else None


def error_from_grpc(code: str, message: str, details: bytes | None) -> A2AError:
    """Classify a peer's gRPC error (reference §7.1: reason first, then the status)."""
    err, _ = error_info_of(details)
    if err is None:
        err = error_from_prefix(message)
    if err is not None:
        return err
    name = _BY_CODE.get(code)
    if name is None:
        return a2a_error("InternalError", f"backend answered gRPC {code}: {message}".rstrip(": "),
                         grpc_status=code)
    return a2a_error(name, message)
