"""The properties every answer must have: findings, strict JSON, error shapes, gRPC.

Each check adds findings (property name, detail) instead of asserting, so that one
example can break several properties and the report names them all. `Findings.verdict`
raises one exception class per property: hypothesis then keeps distinct properties
apart while shrinking, instead of sliding from one bug to another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor
from google.rpc import code_pb2, error_details_pb2, status_pb2

from tests.fuzz.fuzz_documents import V03, V10, GrpcMethod
from translators.errors import BY_NAME, ERROR_INFO_TYPE, ERROR_KINDS

PROPERTIES = {
    "server-error": "a 5xx HTTP status, or gRPC INTERNAL/UNKNOWN/UNAVAILABLE, for client input",
    "internal-error": "an InternalError / InvalidAgentResponse answer while the backends are fine",
    "no-answer": "no answer within the per-call timeout, or the connection dropped",
    "not-json": "the body is not strict JSON (RFC 8259: no NaN/Infinity)",
    "plain-text": "an error page that is not JSON (aiohttp's own text pages)",
    "bad-envelope": "not a JSON-RPC 2.0 response (jsonrpc, id, exactly one of result/error)",
    "bad-error": "an error without the shape of its dialect (ErrorInfo, code, status, prefix)",
    "wrong-dialect": "an answer in another dialect than the caller's",
    "wrong-code": "an error other than the one the contract names for this input",
    "wrong-id": "a JSON-RPC answer whose id is not the request's",
    "bad-result": "a success whose body is not the operation's result in the caller's version",
    "bad-stream": "an event stream where none belongs, or events of the wrong shape",
    "missing-allow": "a 405 without an Allow header",
    "log-problem": "a traceback or error in the gateway's log",
    "backend-complaint": "the gateway forwarded a malformed call to a backend",
    "refused-valid": "a valid value refused where the contract says it passes",
    "unnamed-field": "an InvalidParams answer that does not name the field it refuses",
}


class PropertyViolation(AssertionError):
    """One or more properties broken by one example."""


VIOLATIONS: dict[str, type[PropertyViolation]] = {
    name: type(f"Violation_{name.replace('-', '_')}", (PropertyViolation,), {})
    for name in PROPERTIES}


@dataclass
class Findings:
    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, prop: str, detail: str) -> None:
        assert prop in PROPERTIES, prop
        self.items.append((prop, detail[:600]))

    def verdict(self, case: Any) -> None:
        if not self.items:
            return
        lines = "\n".join(f"  [{p}] {PROPERTIES[p]}: {d}" for p, d in self.items)
        raise VIOLATIONS[self.items[0][0]](f"{case!r}\n{lines}")


# ---------------------------------------------------------------- JSON

def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class HugeInt(str):
    """An integer too long for int() under Python's digit limit, kept as its digits."""


def json_int(digits: str) -> int | HugeInt:
    return int(digits) if len(digits) < 4000 else HugeInt(digits)


def strict_json(raw: bytes | str) -> Any:
    """Parse RFC 8259 JSON: no NaN or Infinity (Python's parser takes them), integers of
    any length (Python's int() refuses more than 4300 digits)."""
    return json.loads(raw, parse_constant=_no_constants, parse_int=json_int)


def is_json_type(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def parses_as(value: Any, desc: Descriptor) -> str | None:
    try:
        json_format.ParseDict(value, message_factory.GetMessageClass(desc)())
    except (json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        return f"not a {desc.full_name}: {exc}"
    return None


# ---------------------------------------------------------------- errors of every dialect

GRPC_CODE_NAMES = frozenset(code_pb2.Code.keys())
V03_ERROR_NAMES = frozenset(k.v03_name or k.name for k in ERROR_KINDS)
# Codes a healthy backend never causes: the gateway's InternalError, the backend's answer
# misread (InvalidAgentResponse), and the backend "down" or "slow".
FAULT_REASONS = frozenset({"INTERNAL_ERROR", "INVALID_AGENT_RESPONSE", "BACKEND_UNAVAILABLE",
                           "BACKEND_TIMEOUT"})
FAULT_CODES = frozenset({-32603, -32006})
GRPC_FAULTS = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
                         grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS,
                         grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED})


def error_info(details: Any) -> dict[str, Any] | None:
    """The ErrorInfo in a v1.0 `data` / `details` list, if well-formed."""
    if not isinstance(details, list):
        return None
    for item in details:
        if isinstance(item, dict) and item.get("@type") == ERROR_INFO_TYPE \
                and isinstance(item.get("reason"), str) and item["reason"] \
                and isinstance(item.get("domain"), str):
            return item
    return None


def rest_error_dialect(body: Any) -> str | None:
    """"1.0" for a google.rpc.Status body, "0.3" for `{"message"}`, None otherwise."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return V10
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return V03
    return None


def check_rest_error(status: int, body: Any, dialects: frozenset[str], f: Findings) -> None:
    version = rest_error_dialect(body)
    if version is None:
        f.add("bad-error", f"HTTP {status} body {body!r:.200}")
        return
    if version not in dialects:
        f.add("wrong-dialect", f"HTTP {status}: a v{version} REST error, expected "
                               f"{sorted(dialects)}: {body!r:.200}")
    if version == V10:
        err = body["error"]
        if err.get("code") != status or err.get("status") not in GRPC_CODE_NAMES \
                or not isinstance(err.get("message"), str) or error_info(err.get("details")) is None:
            f.add("bad-error", f"HTTP {status}: not a google.rpc.Status with an ErrorInfo: "
                               f"{body!r:.300}")
        elif error_info(err["details"])["reason"] in FAULT_REASONS:  # type: ignore[index]
            f.add("internal-error", f"HTTP {status}: {body!r:.300}")


# ---------------------------------------------------------------- gRPC


@dataclass
class GrpcReply:
    code: grpc.StatusCode
    details: str
    trailers: tuple[tuple[str, str | bytes], ...]
    messages: list[bytes]


def _grpc_v03_error(reply: GrpcReply) -> str | None:
    """The error name of a v0.3 error ("<ErrorName>: <message>"), or None."""
    name = reply.details.partition(": ")[0]
    return name if name in V03_ERROR_NAMES else None


def _grpc_v10_error(reply: GrpcReply) -> str | None:
    """The ErrorInfo reason of a v1.0 error (a google.rpc.Status matching the status in
    grpc-status-details-bin), or None."""
    raw = dict(reply.trailers).get("grpc-status-details-bin")
    if not isinstance(raw, bytes):
        return None
    info = error_details_pb2.ErrorInfo()
    try:
        status = status_pb2.Status.FromString(raw)
        found = any(d.Unpack(info) for d in status.details)
    except Exception:  # not a google.rpc.Status
        return None
    ok = found and status.code == reply.code.value[0] and info.reason
    return info.reason if ok else None


def check_grpc_reply(reply: GrpcReply, method: GrpcMethod, f: Findings,
                     expected: str | None = None, dialects: frozenset[str] | None = None,
                     ) -> None:
    """``expected``: the error the contract names (v1.0 name); ``dialects``: the error
    dialects allowed (default: the method's version)."""
    if reply.code == grpc.StatusCode.OK:
        if expected is not None:
            f.add("wrong-code", f"OK, expected {expected}")
        if not reply.messages or (not method.streaming and len(reply.messages) != 1):
            f.add("bad-result", f"OK with {len(reply.messages)} messages")
        cls = message_factory.GetMessageClass(method.response)
        for raw in reply.messages:
            try:
                cls.FromString(raw)
            except Exception as exc:  # DecodeError, or worse
                f.add("bad-result", f"not a {method.response.full_name}: {exc}")
        return
    if reply.code in GRPC_FAULTS:
        f.add("server-error", f"{reply.code.name}: {reply.details!r:.300}")
    dialects = dialects or frozenset({method.version})
    kind = BY_NAME[expected] if expected else None
    found = {V03: _grpc_v03_error(reply), V10: _grpc_v10_error(reply)}
    shapes = [v for v in sorted(dialects) if found[v]]
    if not shapes:
        f.add("bad-error", f"{reply.code.name} {reply.details!r:.200}: not a v"
                           f"{'/'.join(sorted(dialects))} error (v1.0: a google.rpc.Status "
                           f"with an ErrorInfo; v0.3: an '<ErrorName>: ' prefix)")
    elif found[V10] in FAULT_REASONS:
        f.add("internal-error", f"{reply.code.name} {found[V10]}: {reply.details!r:.200}")
    elif kind is not None and not any(found[v] == (kind.reason if v == V10 else (
            kind.v03_name or kind.name)) for v in shapes):
        f.add("wrong-code", f"{reply.code.name} {reply.details!r:.200}, expected {expected}")
