"""v0.3 HTTP+JSON bodies ⇄ canonical messages: the P03 half of translators/rest.py.

A v0.3 REST body is the ProtoJSON of the v0.3 request message (gRPC transcoding of
proto@v0.3), with the resource names (`name`, `parent`) taken from the path (§2, §3.9).
The one exception is the card: v0.3 REST `/v1/card` answers J03, as py@v0.3 servers
did (reference §4.1), though py@HEAD's v0.3 client reads it as P03; both are read.
"""

from __future__ import annotations

from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.j03 import cards
from translators.loss import LossReport
from translators.p03.card import card_to_p10
from translators.p03.common import BytesMode
from translators.p03.json import (
    dump_create_push_body,
    dump_p03,
    parse_create_push_body,
    parse_p03,
)
from translators.p03.objects import stream_response_to_p03
from translators.p03.requests import (
    p03_rules,
    request_to_p03,
    request_to_p10,
    response_to_p03,
    response_to_p10,
)
from translators.protojson import dump_p10, parse_p10
from translators.rest_routes import Route

_BAD_ANSWER = "InvalidAgentResponseError"


def request_to_canonical(route: Route, params: dict[str, str], data: dict[str, Any],
                         loss: LossReport, *, bytes_mode: BytesMode = "auto") -> ProtoMessage:
    """A v0.3 REST client's call: path variables ``params``, body and query ``data``."""
    if route.op == ops.PUSH_CREATE:
        msg: ProtoMessage = parse_create_push_body(data, params.get("taskId", ""))
    else:
        body = dict(data)
        # The path names the resource; it wins over any `name` in the body (py@v0.3).
        for field, template in route.names:
            body[field] = template.format(**params)
        msg = parse_p03(body, p03_rules(route.op).request_type)
    return request_to_p10(route.op, msg, loss, bytes_mode=bytes_mode)


def body_from_canonical(route: Route, request: ProtoMessage, loss: LossReport, *,
                        bytes_mode: BytesMode = "double") -> dict[str, Any] | None:
    """The body toward a v0.3 REST backend (None for body-less routes). The translation
    runs either way, so that what v0.3 cannot express is refused or reported."""
    msg = request_to_p03(route.op, request, loss, bytes_mode=bytes_mode)
    if not route.body:
        return None
    if isinstance(msg, v03.CreateTaskPushNotificationConfigRequest):
        return dump_create_push_body(msg)
    return dump_p03(msg)


def _looks_like_p03_card(body: dict[str, Any]) -> bool:
    # The two card shapes differ only in security: P03 wraps each scheme in a
    # `...SecurityScheme` key and nests requirements under `schemes` (§4.4).
    schemes = body.get("securitySchemes")
    if isinstance(schemes, dict) and any(
            isinstance(s, dict) and any(k.endswith("SecurityScheme") for k in s)
            for s in schemes.values()):
        return True
    security = body.get("security")
    return isinstance(security, list) and any(
        isinstance(r, dict) and list(r) == ["schemes"] and isinstance(r["schemes"], dict)
        for r in security)


def _card_to_canonical(body: Any, loss: LossReport) -> pb.AgentCard:
    if isinstance(body, dict) and _looks_like_p03_card(body):
        return card_to_p10(parse_p03(body, v03.AgentCard, error=_BAD_ANSWER), loss)
    return parse_p10(cards.card_to_p10(body, loss), pb.AgentCard, error=_BAD_ANSWER)


def result_to_canonical(op: ops.Operation, body: Any, loss: LossReport, *,
                        bytes_mode: BytesMode = "auto") -> ProtoMessage | None:
    """A v0.3 REST backend's answer (or one SSE event, op = SendStreamingMessage)."""
    if op.name == ops.EXTENDED_CARD:
        return _card_to_canonical(body, loss)
    response_type = p03_rules(op.name).response_type
    if response_type is None:
        return None
    msg = parse_p03(body, response_type, error=_BAD_ANSWER)
    return response_to_p10(op.name, msg, loss, bytes_mode=bytes_mode)


def result_from_canonical(op: ops.Operation, result: ProtoMessage | None, loss: LossReport,
                          *, bytes_mode: BytesMode = "double") -> Any:
    """The answer for a v0.3 REST client; `{}` for the delete's Empty (§8.13)."""
    if op.name == ops.EXTENDED_CARD and result is not None:
        return cards.card_for_v03(dump_p10(result), loss)
    out = response_to_p03(op.name, result, loss, bytes_mode=bytes_mode)
    return {} if out is None else dump_p03(out)


def stream_item_from_canonical(item: pb.StreamResponse, final: bool, loss: LossReport, *,
                               bytes_mode: BytesMode = "double") -> dict[str, Any]:
    """One SSE event for a v0.3 REST client: a bare P03 StreamResponse (§3.8)."""
    return dump_p03(stream_response_to_p03(item, final, "", loss, bytes_mode=bytes_mode))
