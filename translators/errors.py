"""The canonical A2A error and the tables that render it per binding and version.

One row per error; every codec reads these tables instead of spelling codes inline.
Sources: wire reference §7.1 (v1.0.1), §7.2 (standard JSON-RPC errors), §7.3 (what
real v0.3 peers send outside JSON-RPC), plus the gateway's own three errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

A2A_DOMAIN = "a2a-protocol.org"
GATEWAY_DOMAIN = "a2a-gateway"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"


@dataclass(frozen=True)
class ErrorKind:
    """How one error looks on every carrier.

    ``grpc`` is a google.rpc.Code name; ``http`` the v1.0.1 HTTP status. The ``v03_*``
    columns are what real v0.3 SDK peers used (the v0.3 spec defines only JSON-RPC).
    """

    name: str  # v1.0 error name, e.g. "TaskNotFoundError"
    code: int  # JSON-RPC code
    grpc: str
    http: int
    reason: str
    message: str
    domain: str = A2A_DOMAIN
    v03_name: str | None = None  # None: same name as v1.0
    v03_http: int | None = None
    v03_grpc: str | None = None


def _kind(name: str, code: int, grpc: str, http: int, message: str, **kw: Any) -> ErrorKind:
    reason = kw.pop("reason", None) or re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).upper()
    return ErrorKind(name, code, grpc, http, reason, message, **kw)


ERROR_KINDS: tuple[ErrorKind, ...] = (
    # The nine A2A errors (§7.1, §7.3).
    _kind("TaskNotFoundError", -32001, "NOT_FOUND", 404, "Task not found",
          v03_http=404, v03_grpc="NOT_FOUND"),
    _kind("TaskNotCancelableError", -32002, "FAILED_PRECONDITION", 400, "Task cannot be canceled",
          v03_http=409, v03_grpc="UNIMPLEMENTED"),
    _kind("PushNotificationNotSupportedError", -32003, "FAILED_PRECONDITION", 400,
          "Push Notification is not supported", v03_http=501, v03_grpc="UNIMPLEMENTED"),
    _kind("UnsupportedOperationError", -32004, "FAILED_PRECONDITION", 400,
          "This operation is not supported", v03_http=501, v03_grpc="UNIMPLEMENTED"),
    _kind("ContentTypeNotSupportedError", -32005, "INVALID_ARGUMENT", 400,
          "Incompatible content types", v03_http=415, v03_grpc="UNIMPLEMENTED"),
    _kind("InvalidAgentResponseError", -32006, "INTERNAL", 500, "Invalid agent response",
          v03_http=502, v03_grpc="INTERNAL"),
    _kind("ExtendedAgentCardNotConfiguredError", -32007, "FAILED_PRECONDITION", 400,
          "Extended agent card not configured",
          v03_name="AuthenticatedExtendedCardNotConfiguredError", v03_http=404, v03_grpc="UNKNOWN"),
    _kind("ExtensionSupportRequiredError", -32008, "FAILED_PRECONDITION", 400,
          "Extension support required", v03_http=400, v03_grpc="FAILED_PRECONDITION"),
    _kind("VersionNotSupportedError", -32009, "FAILED_PRECONDITION", 400,
          "Protocol version not supported", v03_http=400, v03_grpc="FAILED_PRECONDITION"),
    # Standard JSON-RPC errors (§7.2, py@HEAD column).
    _kind("JSONParseError", -32700, "INVALID_ARGUMENT", 400, "Invalid JSON payload",
          reason="PARSE_ERROR", v03_http=400, v03_grpc="INTERNAL"),
    _kind("InvalidRequestError", -32600, "INVALID_ARGUMENT", 400,
          "Request payload validation error", v03_http=400, v03_grpc="INVALID_ARGUMENT"),
    _kind("MethodNotFoundError", -32601, "NOT_FOUND", 404, "Method not found",
          v03_http=404, v03_grpc="NOT_FOUND"),
    # A REST path served with other verbs (the answer carries Allow). gRPC's closest code.
    _kind("MethodNotAllowedError", -32601, "UNIMPLEMENTED", 405, "Method not allowed",
          domain=GATEWAY_DOMAIN, v03_http=405, v03_grpc="UNIMPLEMENTED"),
    _kind("InvalidParamsError", -32602, "INVALID_ARGUMENT", 400, "Invalid parameters",
          v03_http=422, v03_grpc="INVALID_ARGUMENT"),
    # py and go both send INTERNAL_ERROR (§7.2), not the name rule's INTERNAL.
    _kind("InternalError", -32603, "INTERNAL", 500, "Internal error",
          reason="INTERNAL_ERROR", v03_http=500, v03_grpc="INTERNAL"),
    # The gateway's own: the backend could not be used. JSON-RPC has no code for them, so
    # they travel as -32603 and are told apart by ErrorInfo (domain a2a-gateway).
    _kind("BackendUnavailableError", -32603, "UNAVAILABLE", 502, "Backend agent unavailable",
          domain=GATEWAY_DOMAIN, v03_http=502, v03_grpc="UNAVAILABLE"),
    _kind("BackendTimeoutError", -32603, "DEADLINE_EXCEEDED", 504, "Backend agent timed out",
          domain=GATEWAY_DOMAIN, v03_http=504, v03_grpc="DEADLINE_EXCEEDED"),
    # The gateway's state store (task index, rate buckets) cannot be used now: the call
    # may be retried (Retry-After); it is neither the backend's fault nor a bug, and
    # nothing was done that the caller would have to know of.
    _kind("StoreUnavailableError", -32603, "UNAVAILABLE", 503,
          "The gateway's state store is unavailable; retry later", domain=GATEWAY_DOMAIN,
          v03_http=503, v03_grpc="UNAVAILABLE"),
    # A limit of the gateway's was reached (open streams, calls in flight toward a
    # backend): the caller may retry later. 429 is google.rpc's HTTP for RESOURCE_EXHAUSTED.
    _kind("ResourceExhaustedError", -32603, "RESOURCE_EXHAUSTED", 429,
          "The gateway is at a limit; retry later", domain=GATEWAY_DOMAIN, v03_http=429,
          v03_grpc="RESOURCE_EXHAUSTED"),
    # The request itself was refused before it was read in full: JSON-RPC has no code for
    # it but "invalid request"; HTTP says which.
    _kind("PayloadTooLargeError", -32600, "RESOURCE_EXHAUSTED", 413, "Request body too large",
          domain=GATEWAY_DOMAIN, v03_http=413, v03_grpc="RESOURCE_EXHAUSTED"),
    _kind("RequestTimeoutError", -32600, "DEADLINE_EXCEEDED", 408,
          "The request was not received in time", domain=GATEWAY_DOMAIN, v03_http=408,
          v03_grpc="DEADLINE_EXCEEDED"),
    # Who may call (README "Security"). v1.0 asks for a "JSON-RPC custom error" (spec@v1.0.1
    # §3.3.2) and A2A owns -32001..-32099, so -32000, told apart by the ErrorInfo reason.
    _kind("UnauthenticatedError", -32000, "UNAUTHENTICATED", 401,
          "Authentication required", domain=GATEWAY_DOMAIN, v03_http=401,
          v03_grpc="UNAUTHENTICATED"),
    _kind("PermissionDeniedError", -32000, "PERMISSION_DENIED", 403, "Permission denied",
          domain=GATEWAY_DOMAIN, v03_http=403, v03_grpc="PERMISSION_DENIED"),
    # A tenant the gateway does not have. -32602 keeps JSON-RPC clients' handling of a bad
    # parameter; HTTP and gRPC say "not found".
    _kind("TenantNotFoundError", -32602, "NOT_FOUND", 404, "Unknown tenant",
          domain=GATEWAY_DOMAIN, v03_http=404, v03_grpc="NOT_FOUND"),
)

BY_NAME: dict[str, ErrorKind] = {k.name: k for k in ERROR_KINDS}
BY_NAME.update({k.v03_name: k for k in ERROR_KINDS if k.v03_name})
BY_REASON: dict[str, ErrorKind] = {k.reason: k for k in ERROR_KINDS}
BY_REASON["INVALID_REQUEST"] = BY_NAME["InvalidRequestError"]
# The gateway's own errors share codes with the standard ones and are told apart by their
# ErrorInfo reason; a bare code from a peer is read as the A2A or JSON-RPC error it names.
BY_CODE: dict[int, ErrorKind] = {k.code: k for k in ERROR_KINDS if k.domain == A2A_DOMAIN}


_MAX_MESSAGE = 1024
_MAX_METADATA_VALUE = 256


@dataclass
class A2AError(Exception):
    """One canonical error, whatever carrier it arrived on or will leave on."""

    kind: ErrorKind
    message: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.message:
            self.message = self.kind.message
        # What callers sent may be echoed here: bounded, so an error always fits the
        # carrier (gRPC trailers are limited to 8 KiB).
        if len(self.message) > _MAX_MESSAGE:
            self.message = self.message[:_MAX_MESSAGE] + "..."
        for key, value in self.metadata.items():
            if len(value) > _MAX_METADATA_VALUE:
                self.metadata[key] = value[:_MAX_METADATA_VALUE] + "..."
        super().__init__(self.message)

    @property
    def name(self) -> str:
        return self.kind.name

    def error_info(self) -> dict[str, Any]:
        """google.rpc.ErrorInfo as ProtoJSON, metadata values stringified (map<string,string>)."""
        info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": self.kind.reason,
                                "domain": self.kind.domain}
        if self.metadata:
            info["metadata"] = {k: str(v) for k, v in self.metadata.items()}
        return info


def a2a_error(name: str, message: str = "", **metadata: Any) -> A2AError:
    return A2AError(BY_NAME[name], message, {k: str(v) for k, v in metadata.items()})


def invalid_params(message: str, **metadata: Any) -> A2AError:
    return a2a_error("InvalidParamsError", message, **metadata)


def error_from_jsonrpc(error: Any) -> A2AError:
    """Classify a JSON-RPC error object from a peer of either version.

    ErrorInfo.reason wins over the code (reference §7.1), because -32603 and
    peers' private codes are ambiguous.
    """
    if not isinstance(error, dict):
        return a2a_error("InvalidAgentResponseError", "backend sent a malformed JSON-RPC error")
    raw_message = error.get("message")
    message = raw_message if isinstance(raw_message, str) else ""
    data = error.get("data")
    infos = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
    for info in infos:
        kind = BY_REASON.get(str(info.get("reason", "")))
        if kind is not None and info.get("domain") in (A2A_DOMAIN, GATEWAY_DOMAIN, None):
            md = info.get("metadata")
            return A2AError(kind, message, {str(k): str(v) for k, v in md.items()}
                            if isinstance(md, dict) else {})
    code = error.get("code")
    # JSON-RPC 2.0 requires an integer code; without one the error cannot be classified.
    if not isinstance(code, int) or isinstance(code, bool):
        return a2a_error("InvalidAgentResponseError",
                         f"backend sent a JSON-RPC error without an integer code: {message}"
                         if message else "backend sent a JSON-RPC error without an integer code")
    kind = BY_CODE.get(code)
    if kind is None:
        kind = BY_NAME["InternalError"]
        message = f"backend error {code}: {message}" if message else f"backend error {code}"
    metadata = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    return A2AError(kind, message, metadata)


def error_to_jsonrpc_v10(err: A2AError) -> dict[str, Any]:
    return {"code": err.kind.code, "message": err.message, "data": [err.error_info()]}


def error_to_jsonrpc_v03(err: A2AError) -> dict[str, Any]:
    """v0.3 `data` is free-form: carry ErrorInfo's metadata flat, plus the reason."""
    out: dict[str, Any] = {"code": err.kind.code, "message": err.message}
    data: dict[str, Any] = dict(err.metadata)
    if err.kind.domain != A2A_DOMAIN:
        data["reason"] = err.kind.reason
    if data:
        out["data"] = data
    return out
