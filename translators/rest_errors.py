"""Errors on the HTTP+JSON binding: rendering them and reading them back (reference §7).

v1.0 bodies are google.rpc.Status JSON with an ErrorInfo; v0.3 peers (a2a-sdk 0.3.x)
send `{"message": ...}` with their own status table (§7.3). Inbound errors are
classified by ErrorInfo reason first, then by the status code, with the table of the
peer's version, because v1.0.0 backends still send 409/415/502.
"""

from __future__ import annotations

from typing import Any

from translators.errors import A2A_DOMAIN, BY_NAME, BY_REASON, A2AError, a2a_error
from translators.versions import V10

# What an HTTP status means when a peer sends no ErrorInfo: v0.3 peers (§7.3) and v1.0.0
# peers used 409/415/501/502/422 for A2A errors, so one table serves both versions. A 405
# on an A2A route means the peer does not serve that operation (a2a-sdk 0.3.26 has no
# DELETE push-config route): UnsupportedOperation, not a fault of the client's request.
_BY_HTTP = {400: "InvalidRequestError", 404: "TaskNotFoundError", 405: "UnsupportedOperationError",
            409: "TaskNotCancelableError", 415: "ContentTypeNotSupportedError",
            422: "InvalidParamsError", 500: "InternalError",
            501: "UnsupportedOperationError", 502: "InvalidAgentResponseError"}


def error_to_rest_v10(err: A2AError) -> tuple[int, dict[str, Any]]:
    status = err.kind.http
    return status, {"error": {
        "code": status,
        "status": err.kind.grpc,
        "message": err.message,
        "details": [err.error_info()],
    }}


def error_to_rest_v03(err: A2AError) -> tuple[int, dict[str, Any]]:
    status = err.kind.v03_http or err.kind.http
    body: dict[str, Any] = {"message": err.message}
    if err.kind.domain != A2A_DOMAIN:
        body["reason"] = err.kind.reason
    return status, body


def error_to_rest(err: A2AError, version: str) -> tuple[int, dict[str, Any]]:
    return error_to_rest_v10(err) if version == V10 else error_to_rest_v03(err)


def _message_of(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        inner: dict[str, Any] = error if isinstance(error, dict) else body
        for key in ("message", "detail", "title"):
            if isinstance(inner.get(key), str):
                return str(inner[key])
    return ""


def _error_infos(body: Any) -> list[dict[str, Any]]:
    inner = body.get("error") if isinstance(body, dict) else None
    details = inner.get("details") if isinstance(inner, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def error_from_rest(status: int, body: Any) -> A2AError:
    """Classify a peer's non-2xx REST answer (parse by body shape, not content type)."""
    message = _message_of(body)
    for info in _error_infos(body):
        kind = BY_REASON.get(str(info.get("reason", "")))
        if kind is not None:
            md = info.get("metadata")
            metadata = {str(k): str(v) for k, v in md.items()} if isinstance(md, dict) else {}
            return A2AError(kind, message, metadata)
    name = _BY_HTTP.get(status)
    if name is None or status == 405:
        name = name or ("InternalError" if status >= 500 else "InvalidRequestError")
        message = f"backend answered HTTP {status}: {message}".rstrip(": ")
    return a2a_error(name, message or BY_NAME[name].message, http_status=status)

