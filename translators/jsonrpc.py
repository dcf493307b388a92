"""The JSON-RPC dialects: method names, params, results and errors of v0.3 and v1.0.

Both directions go through the canonical v1.0 messages: ingress uses the ``*_to_canonical``
half on what a client sent, egress the ``*_from_canonical`` half toward a backend, and
the reverse for answers. v1.0 params are P10 already; v0.3 params go through the J03
rules table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import (
    A2AError,
    a2a_error,
    error_from_jsonrpc,
    error_to_jsonrpc_v03,
    error_to_jsonrpc_v10,
    invalid_params,
)
from translators.j03.objects import stream_response_to_j03
from translators.j03.requests import j03_rules, strip_history
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10, reclassify
from translators.versions import V03, V10

JSONRPC = "JSONRPC"


@dataclass(frozen=True)
class Envelope:
    """A JSON-RPC 2.0 request as far as the envelope goes: id, method, params."""

    request_id: str | int | None
    method: str
    params: Any


class EnvelopeError(Exception):
    """A request the JSON-RPC layer refuses; ``request_id`` is its id when that was valid."""

    def __init__(self, error: A2AError, request_id: str | int | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def _valid_id(value: Any) -> bool:
    # JSON-RPC 2.0: a string, a number (without fraction), or null. bool is not a number;
    # a string must be text (a lone surrogate is not).
    if isinstance(value, str):
        return value.isascii() or _is_text(value)
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_envelope(body: Any) -> Envelope:
    """The envelope of a client's request; EnvelopeError (InvalidRequest) for anything that
    is not one JSON-RPC 2.0 request. An id that is not a string, integer or null is refused
    before anything runs, and the answer's id is then null."""
    if not isinstance(body, dict):
        message = "batch requests are not supported" if isinstance(body, list) else \
            "a JSON-RPC request is a JSON object"
        raise EnvelopeError(a2a_error("InvalidRequestError", message))
    rid = body.get("id")
    if not _valid_id(rid):
        raise EnvelopeError(a2a_error("InvalidRequestError",
                                      "the id must be a string, an integer or null"))
    method = body.get("method")
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise EnvelopeError(a2a_error("InvalidRequestError",
                                      "expected jsonrpc '2.0' and a string method"), rid)
    return Envelope(rid, method, body.get("params"))


def read_answer(body: Any, sent_id: str | int, *, empty_ok: bool = False) -> Any:
    """A backend's JSON-RPC response to the request sent with ``sent_id``: its ``result``
    (None when a successful answer has none, as a2a-sdk 0.3.26's push-config delete does),
    or the A2AError its ``error`` names. Anything else — not a 2.0 response, another id —
    is InvalidAgentResponseError."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise a2a_error("InvalidAgentResponseError", "not a JSON-RPC 2.0 response")
    if "error" in body:
        # An error may carry a null id (the backend could not read ours); still its error.
        if body.get("id") not in (sent_id, None):
            raise a2a_error("InvalidAgentResponseError",
                            "a JSON-RPC error answering another request id")
        raise error_from_jsonrpc(body["error"])
    if body.get("id") != sent_id or isinstance(body.get("id"), bool):
        raise a2a_error("InvalidAgentResponseError", "a JSON-RPC response to another request "
                        "id than the one sent")
    if "result" not in body and not empty_ok:
        raise a2a_error("InvalidAgentResponseError", "a JSON-RPC response without result or "
                        "error")
    return body.get("result")


def operation_for_method(method: str) -> tuple[ops.Operation, str] | None:
    """The operation a method name calls and the version it belongs to (names never
    overlap between versions, reference §1)."""
    op = ops.BY_JSONRPC_V03.get(method)
    if op is not None:
        return op, V03
    op = ops.BY_NAME.get(method)
    return (op, V10) if op is not None else None


def method_name(op: ops.Operation, version: str) -> str:
    if version == V10:
        return op.name
    if op.jsonrpc_v03 is None:
        raise _unsupported_v03(op)
    return op.jsonrpc_v03


def _unsupported_v03(op: ops.Operation) -> A2AError:
    return a2a_error("UnsupportedOperationError",
                     f"{op.name} does not exist in A2A v0.3 and the backend speaks v0.3")


# ---------------------------------------------------------------- requests


def params_to_canonical(op: ops.Operation, version: str, params: Any,
                        loss: LossReport) -> ProtoMessage:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid_params("params must be an object")
    if version == V03:
        params = j03_rules(op.name).params_to_p10(params, loss)
    return parse_p10(params, op.request)


def params_from_canonical(op: ops.Operation, version: str, request: ProtoMessage,
                          loss: LossReport) -> Any:
    p10 = dump_p10(request)
    if version == V10:
        return p10
    method_name(op, version)  # refuses what v0.3 cannot express before anything is sent
    return j03_rules(op.name).params_to_j03(p10, loss)


# ---------------------------------------------------------------- results


def result_to_canonical(op: ops.Operation, version: str, result: Any, loss: LossReport,
                        request: ProtoMessage | None = None) -> ProtoMessage | None:
    """A backend's `result` as the canonical response. Shape errors are the backend's
    (InvalidAgentResponseError), never the client's."""
    if op.response is None:
        return None
    loss.answering = True
    try:
        if version == V03:
            result = j03_rules(op.name).result_to_p10(result, loss)
            if request is not None and isinstance(result, dict):
                result = strip_history(result, dump_p10(request))
        return parse_p10(result, op.response, error="InvalidAgentResponseError")
    except A2AError as err:
        raise reclassify(err) from None


def result_from_canonical(op: ops.Operation, version: str, result: ProtoMessage | None,
                          loss: LossReport) -> Any:
    if result is None:
        return None
    loss.answering = True
    p10 = dump_p10(result)
    if version == V10:
        return p10
    return j03_rules(op.name).result_to_j03(p10, loss)


def stream_item_to_canonical(version: str, result: Any, loss: LossReport) -> pb.StreamResponse:
    item = result_to_canonical(ops.BY_NAME[ops.STREAM], version, result, loss)
    assert isinstance(item, pb.StreamResponse)
    return item


def stream_item_from_canonical(version: str, item: pb.StreamResponse, final: bool,
                               loss: LossReport) -> Any:
    loss.answering = True
    p10 = dump_p10(item)
    if version == V10:
        return p10
    return stream_response_to_j03(p10, final, "result", loss)


# ---------------------------------------------------------------- envelopes


def success(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: Any, err: A2AError, version: str) -> dict[str, Any]:
    body = error_to_jsonrpc_v10(err) if version == V10 else error_to_jsonrpc_v03(err)
    return {"jsonrpc": "2.0", "id": request_id, "error": body}
