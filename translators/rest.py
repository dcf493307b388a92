"""The HTTP+JSON dialects: request and answer bodies of v1.0 (P10) and v0.3 (P03).

A REST request is a route (rest_routes.py), path variables, query parameters and a JSON
body. These functions turn that into the canonical request and back, and do the same
for answers and stream items. v0.3 goes through the v0.3-proto translator (p03/).
"""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import A2AError, invalid_params
from translators.j03.common import iso_to_p10
from translators.j03.objects import STATE_J03_TO_P10
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10, reclassify
from translators.rest_errors import error_from_rest
from translators.rest_routes import Route, query_string_values, query_values
from translators.versions import V10

HTTP_JSON = "HTTP+JSON"


def _lenient_query(values: dict[str, Any]) -> dict[str, Any]:
    state = values.get("status")
    if isinstance(state, str) and not state.startswith("TASK_STATE_"):
        # Accept the v0.3 spellings too (`working`), as a courtesy to hand-written URLs.
        values["status"] = STATE_J03_TO_P10.get(state.lower(), state)
    if "statusTimestampAfter" in values:
        values["statusTimestampAfter"] = iso_to_p10(values["statusTimestampAfter"],
                                                    "statusTimestampAfter")
    return values


def request_to_canonical(route: Route, params: dict[str, str], query: dict[str, list[str]],
                         body: Any, loss: LossReport, **p03_options: Any) -> ProtoMessage:
    op = ops.BY_NAME[route.op]
    if body is not None and not isinstance(body, dict):
        raise invalid_params("the request body must be a JSON object")
    data: dict[str, Any] = dict(body) if route.body and body else {}
    data.update(_lenient_query(query_values(route, query)))
    if route.version == V10:
        data.update(params)
        return parse_p10(data, op.request)
    from translators.p03 import rest as p03_rest

    return p03_rest.request_to_canonical(route, params, data, loss, **p03_options)


def request_from_canonical(route: Route, request: ProtoMessage, loss: LossReport,
                           **p03_options: Any,
                           ) -> tuple[dict[str, str], dict[str, str], dict[str, Any] | None]:
    """(path variables, query parameters, body) for a backend call."""
    p10 = dump_p10(request)
    variables = {name: str(p10.get(name, "")) for name in route.pattern.groupindex}
    query = query_string_values(route, p10)
    if route.version != V10:
        from translators.p03 import rest as p03_rest

        return variables, query, p03_rest.body_from_canonical(route, request, loss,
                                                              **p03_options)
    body = None
    if route.body:
        body = {k: v for k, v in p10.items() if k not in variables and k != "tenant"}
    return variables, query, body


def result_to_canonical(op: ops.Operation, version: str, body: Any, loss: LossReport,
                        request: ProtoMessage | None = None,
                        **p03_options: Any) -> ProtoMessage | None:
    if op.response is None:
        return None
    loss.answering = True
    try:
        if version == V10:
            return parse_p10(body, op.response, error="InvalidAgentResponseError")
        from translators.p03 import rest as p03_rest

        return p03_rest.result_to_canonical(op, body, loss, request, **p03_options)
    except A2AError as err:
        raise reclassify(err) from None


def result_from_canonical(op: ops.Operation, version: str, result: ProtoMessage | None,
                          loss: LossReport, **p03_options: Any) -> Any:
    loss.answering = True
    if result is None:
        return {}  # google.protobuf.Empty (DELETE answers `{}`, reference §8.13)
    if version == V10:
        return dump_p10(result)
    from translators.p03 import rest as p03_rest

    return p03_rest.result_from_canonical(op, result, loss, **p03_options)


def stream_item_to_canonical(version: str, data: Any, loss: LossReport,
                             **p03_options: Any) -> pb.StreamResponse:
    item = result_to_canonical(ops.BY_NAME[ops.STREAM], version, data, loss, **p03_options)
    assert isinstance(item, pb.StreamResponse)
    return item


def stream_item_from_canonical(version: str, item: pb.StreamResponse, final: bool,
                               loss: LossReport, **p03_options: Any) -> Any:
    loss.answering = True
    if version == V10:
        return dump_p10(item)
    from translators.p03 import rest as p03_rest

    return p03_rest.stream_item_from_canonical(item, final, loss, **p03_options)


def stream_error(body: Any) -> A2AError:
    """The error an SSE `error` event of a REST stream carries. The event has no HTTP
    status of its own: a v1.0 body's google.rpc.Status says it, else the body's shape."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code < 600 else 500
    return error_from_rest(status, body)
