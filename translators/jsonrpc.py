"""The JSON-RPC dialects: method names, params, results and errors of v0.3 and v1.0.

Both directions go through the canonical v1.0 messages: ingress uses the ``*_to_canonical``
half on what a client sent, egress the ``*_from_canonical`` half toward a backend, and
the reverse for answers. v1.0 params are P10 already; v0.3 params go through the J03
rules table.
"""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import (
    A2AError,
    a2a_error,
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
