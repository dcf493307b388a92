"""Reading an answer's error by its shape: which A2A error, and which dialect's form.

The translators' readers (translators/errors.py, rest_errors.py, grpc_errors.py) name the
error; this module adds what a doctor needs and a gateway does not: whether the answer
was an A2A answer at all (a bare 404 from a router, gRPC UNIMPLEMENTED, a JSON-RPC
MethodNotFound are "this dialect is not served here") and whose error shape it had.
"""

from __future__ import annotations

from typing import Any

from gateway.doctor.report import ErrorSeen
from translators.errors import A2A_DOMAIN, error_from_jsonrpc
from translators.grpc_errors import error_from_prefix, error_info_of
from translators.rest_errors import error_from_rest

NO_A2A = "none"  # the shape of an answer that is not an A2A answer
# Errors that say "no such method or route here": the dialect is not served.
NOT_SERVED = frozenset({"MethodNotFoundError", "NoA2AAnswer", "Unreachable", "Timeout"})


def transport_error(detail: str) -> ErrorSeen:
    return ErrorSeen("Unreachable", "", detail[:300], NO_A2A)


def _json(raw: bytes) -> Any:
    import json

    try:
        return json.loads(raw)
    except ValueError:
        return None


def _has_error_info(items: Any) -> bool:
    return isinstance(items, list) and any(
        isinstance(d, dict) and str(d.get("@type", "")).endswith("google.rpc.ErrorInfo")
        and d.get("domain") in (A2A_DOMAIN, None) for d in items)


def classify_jsonrpc(status: int, raw: bytes, version: str) -> tuple[Any, ErrorSeen | None]:
    """(the parsed body, the error it carries or None for a result)."""
    body = _json(raw)
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        text = raw[:120].decode("utf-8", "replace").strip()
        return body, ErrorSeen("NoA2AAnswer", f"HTTP {status}",
                               f"not a JSON-RPC response: {text}", NO_A2A)
    if "error" not in body:
        return body, None
    error = body["error"]
    err = error_from_jsonrpc(error)
    code = error.get("code") if isinstance(error, dict) else None
    data = error.get("data") if isinstance(error, dict) else None
    shape = "JSONRPC 1.0" if _has_error_info(data) else "JSONRPC 0.3"
    name = "MethodNotFoundError" if code == -32601 else err.name
    return body, ErrorSeen(name, str(code), err.message, shape)


def classify_rest(status: int, raw: bytes) -> tuple[Any, ErrorSeen | None]:
    if status < 400:
        return _json(raw), None
    body = _json(raw)
    inner = body.get("error") if isinstance(body, dict) else None
    wire = f"HTTP {status}"
    if isinstance(inner, dict) and _has_error_info(inner.get("details")):
        err = error_from_rest(status, body)
        return body, ErrorSeen(err.name, wire, err.message, "HTTP+JSON 1.0")
    if isinstance(body, dict) and isinstance(body.get("message"), str) and "detail" not in body:
        # a2a-sdk 0.3.x answers REST errors as {"message": ...} (reference §7.3).
        err = error_from_rest(status, body)
        return body, ErrorSeen(err.name, wire, err.message, "HTTP+JSON 0.3")
    text = raw[:120].decode("utf-8", "replace").strip()
    return body, ErrorSeen("NoA2AAnswer", wire, text or "(empty body)", NO_A2A)


def classify_grpc(code: str, message: str, details: bytes | None) -> ErrorSeen:
    if code == "UNAVAILABLE" and details is None:
        return ErrorSeen("Unreachable", code, message[:300], NO_A2A)
    if code == "DEADLINE_EXCEEDED" and details is None:
        return ErrorSeen("Timeout", code, message[:300], NO_A2A)
    err, _ = error_info_of(details)
    if err is not None:
        return ErrorSeen(err.name, code, err.message, "GRPC 1.0")
    err = error_from_prefix(message)
    if err is not None:
        return ErrorSeen(err.name, code, err.message, "GRPC 0.3")
    name = "MethodNotFoundError" if code == "UNIMPLEMENTED" else f"Grpc{code.title()}"
    return ErrorSeen(name, code, message[:300], NO_A2A)


def describe(error: ErrorSeen) -> str:
    code = f" ({error.wire_code})" if error.wire_code else ""
    message = f": {error.message}" if error.message else ""
    return f"{error.name}{code}{message}"[:160]
