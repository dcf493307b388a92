"""What every dialect (binding x version) offers, and what they hand each other.

A dialect is a codec for one of the six ways to speak A2A. The gateway's I/O side moves
bytes and calls a dialect four times per call — decode the client's request, encode it
for the backend, decode the backend's answer, encode the answer for the client — and
twice per stream event (decode, encode). Everything between those calls is canonical:
the v1.0 protobuf messages, a LossReport, an A2AError.

The wire forms differ per binding (JSON-RPC: one JSON document; HTTP+JSON: a route, its
path and query, a body; gRPC: message bytes), so each binding module defines its own
request and answer types; the shape of the interface is the same for all six.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import orjson
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.answers import enforce_answer_rules
from translators.capabilities import precheck
from translators.dialects.contract import ClientCodec, Dialect, ErrorAnswer
from translators.dialects.contract import HttpAnswer as HttpAnswer
from translators.dialects.contract import WireAnswer as WireAnswer
from translators.dialects.contract import WireRequest as WireRequest
from translators.errors import A2AError, a2a_error, invalid_params
from translators.json_text import number_refusal, parse_json
from translators.loss import LossPolicy, LossReport
from translators.protojson import reclassify
from translators.sse import SseEvent, SseParser
from translators.validation import check_request
from translators.versions import V03, V10

# What every call toward a backend of a version carries besides its payload: v1.0 peers
# (a2a-sdk 1.x) read a missing A2A-Version as 0.3 and refuse v1.0 methods (reference §1);
# v0.3 peers may read either extensions header name (§1), so they get both.
BACKEND_HEADERS: dict[str, dict[str, str]] = {V10: {"a2a-version": V10}, V03: {}}
EXTENSION_HEADERS: dict[str, tuple[str, ...]] = {
    V10: ("a2a-extensions",), V03: ("a2a-extensions", "x-a2a-extensions")}


def has_tenant(cls: type[ProtoMessage]) -> bool:
    return "tenant" in cls.DESCRIPTOR.fields_by_name


# Operations a backend of the client's own dialect gets as the client sent them. Not the
# others: push configs and the extended card carry addresses the gateway rewrites (relay
# URLs, its own interfaces), and streams keep the gateway's per-event bounds.
FORWARDED_OPS = frozenset({ops.SEND, ops.GET_TASK, ops.CANCEL, ops.LIST_TASKS})


def forwardable(op: ops.Operation, request: ProtoMessage, client: Dialect, backend: Dialect,
                backend_tenant: str | None) -> bool:
    """Whether a call may skip translation: same dialect on both sides, and nothing in
    it that the gateway must change (a push config to relay, a tenant to rename)."""
    if client is not backend or op.name not in FORWARDED_OPS or backend_tenant:
        return False
    if getattr(request, "tenant", ""):
        return False
    if isinstance(request, pb.SendMessageRequest):
        return not request.configuration.HasField("task_push_notification_config")
    return True


_DECODER = json.JSONDecoder()


def json_object(raw: bytes) -> dict[str, Any] | None:
    """A forwarded answer as a JSON object, or None when it is not one (it then goes the
    translated way, which names what is wrong). Numbers are not checked: the client gets
    the backend's text, not the gateway's reading of it, so orjson reads it (a fifth of
    the json module's time; an integer beyond 64 bits may come out a float, which nothing
    here reads); what orjson refuses (NaN, Infinity), the json module still reads. UTF-8
    only (RFC 8259 §8.1): what json.loads would sniff for first costs a third of the read."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            value = _DECODER.decode(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None
    return value if isinstance(value, dict) else None


class SseEventReader:
    """A backend's event stream over SSE, fed as it arrives, each frame read as one
    canonical StreamResponse by ``read_frame`` (the binding's framing rules)."""

    def __init__(self, max_event_bytes: int) -> None:
        self._sse = SseParser(max_event_bytes)

    def read_frame(self, frame: SseEvent) -> pb.StreamResponse:
        raise NotImplementedError

    def feed(self, chunk: bytes) -> Iterable[pb.StreamResponse]:
        """The chunk's events, each read when it is taken: a read may hold hundreds, and
        the one serving them takes turns between events (gateway/streams/turns.py), not after
        all of them are read. A frame that cannot be read raises when it is reached.
        Empty (false) when the chunk completed no event. A chunk of one event (the usual
        case for a backend that is not bursting) is read here and now: one call from the
        gateway for the read and its decoding, not two (bench/README.md, "One stream
        driver")."""
        frames = self._sse.feed(chunk)
        if len(frames) == 1:
            return (self.read_frame(frames[0]),)
        return map(self.read_frame, frames) if frames else ()

    def close(self) -> list[pb.StreamResponse]:
        return [self.read_frame(frame) for frame in self._sse.close()]


@dataclass
class DecodedCall(Generic[ErrorAnswer]):
    """A client's call, decoded: the operation, the dialect it spoke and the codec that
    answers it, the canonical request, and what the binding carried beside it."""

    op: ops.Operation
    dialect: Dialect
    codec: ClientCodec[ErrorAnswer]
    request: ProtoMessage
    loss: LossReport
    tenant: str | None = None
    wire: WireRequest | None = None  # what the client sent (same-dialect pass-through)

    def __post_init__(self) -> None:
        # The decoding is done: what is dropped from here on is a backend's translation.
        self.loss.next_attempt()


def backend_json(raw: bytes | str, what: str = "the answer") -> Any:
    """A backend's JSON text; what is not JSON, or holds numbers no A2A field can, is the
    backend's fault (InvalidAgentResponseError)."""
    try:
        parsed = parse_json(raw, what=what)
    except A2AError as err:
        raise a2a_error("InvalidAgentResponseError", err.message) from None
    if parsed.bad_number is not None:
        raise number_refusal(parsed.bad_number, "InvalidAgentResponseError")
    return parsed.value


def client_request(op: ops.Operation, decode: Callable[[], ProtoMessage]) -> ProtoMessage:
    """A client's request, decoded and checked (the rules every dialect shares)."""
    request = decode()
    check_request(op.name, request)
    return request


def check_backend_card(op: ops.Operation, request: ProtoMessage, card: Any,
                       extensions: Sequence[str]) -> None:
    """What the backend's card rules out (spec §3.3.4) is refused before anything is sent;
    no card known means no opinion."""
    if card is not None:
        refused = precheck(op.name, request, card, list(extensions))
        if refused is not None:
            raise refused


def refuse_losses(loss: LossReport) -> None:
    """Under `loss_policy: reject`, a request that lost fields in translation (toward the
    canonical model or toward the backend) is refused before it is sent."""
    if loss.request and loss.policy is LossPolicy.REJECT:
        raise invalid_params(
            f"the request carries fields the other protocol version cannot express: "
            f"{', '.join(loss.request)} (loss_policy: reject)", fields=",".join(loss.request))


def backend_answer(request: ProtoMessage, loss: LossReport,
                   decode: Callable[[], ProtoMessage | None]) -> ProtoMessage | None:
    """A backend's answer, decoded: its translation losses recorded on the answer's side,
    a shape error blamed on the backend, and the spec's answer rules applied."""
    loss.answering = True
    try:
        answer = decode()
    except A2AError as err:
        raise reclassify(err) from None
    enforce_answer_rules(request, answer)
    return answer


def backend_event(request: ProtoMessage, loss: LossReport,
                  decode: Callable[[], ProtoMessage | None]) -> pb.StreamResponse:
    event = backend_answer(request, loss, decode)
    assert isinstance(event, pb.StreamResponse)
    return event
