"""The JSON-RPC dialects: binding JSONRPC, versions 0.3 and 1.0 (reference §2, §3.8, §7).

One endpoint serves both: the method name says the version (`message/send` is v0.3,
`SendMessage` v1.0; the names never overlap, reference §1). v1.0 params and results are
P10 already; v0.3 ones go through the J03 translator's rules table. Errors travel with
HTTP 200, except those about the transport (a body too large or too slow), which the
JSON-RPC layer never saw. Streams are SSE whose every `data:` is a full JSON-RPC
response with the request's id.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.dialects.base import (
    DecodedCall,
    SseEventReader,
    WireAnswer,
    WireRequest,
    backend_answer,
    backend_event,
    backend_json,
    check_backend_card,
    client_request,
    has_tenant,
    json_object,
    refuse_losses,
)
from translators.dialects.contract import JSON_MEDIA, HttpAnswer, Refusal
from translators.dialects.jsonrpc_envelope import Envelope, read_answer, success, valid_id
from translators.errors import (
    A2AError,
    a2a_error,
    error_to_jsonrpc_v03,
    error_to_jsonrpc_v10,
    invalid_params,
)
from translators.j03.objects import stream_response_to_j03
from translators.j03.requests import j03_rules
from translators.json_text import dump_bytes, number_refusal, parse_json
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10
from translators.sse import SseEvent, sse_frame
from translators.tenancy import request_tenant
from translators.versions import V03, V10, Version, VersionRules, declared_version, negotiate

JSONRPC: Final = "JSONRPC"
# Errors about the request's transport or its caller, not its content: the HTTP status
# says them (a body too large or too slow, 401/403 as the spec asks of auth on every
# binding, 429 and 503 so that retry logic and load balancers see a limit or an outage
# with its Retry-After), the body is the JSON-RPC error.
TRANSPORT_ERRORS = frozenset({"PayloadTooLargeError", "RequestTimeoutError",
                              "UnauthenticatedError", "PermissionDeniedError",
                              "ResourceExhaustedError", "StoreUnavailableError"})


# ---------------------------------------------------------------- envelopes


def read_envelope(body: Any, dialect: JsonRpcDialect) -> Envelope:
    """The envelope of a client's request; Refusal (InvalidRequest) for anything that is
    not one JSON-RPC 2.0 request. An id that is not a string, integer or null is refused
    before anything runs, and the answer's id is then null."""
    if not isinstance(body, dict):
        message = "batch requests are not supported" if isinstance(body, list) else \
            "a JSON-RPC request is a JSON object"
        raise Refusal(a2a_error("InvalidRequestError", message), dialect.client(None, None))
    rid = body.get("id")
    if not valid_id(rid):
        raise Refusal(a2a_error("InvalidRequestError",
                                "the id must be a string, an integer or null"),
                      dialect.client(None, None))
    method = body.get("method")
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise Refusal(a2a_error("InvalidRequestError",
                                "expected jsonrpc '2.0' and a string method"),
                      dialect.client(None, rid))
    return Envelope(rid, method, body.get("params"))


# ---------------------------------------------------------------- the dialects


class JsonRpcDialect:
    """JSON-RPC of one version; the version-specific pieces are the subclasses'."""

    binding: Final = JSONRPC
    version: Version
    extension_header = ""  # how this version names the extensions header

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    # ------------------------------------------------------------ per version

    def method(self, op: ops.Operation) -> str:
        raise NotImplementedError

    def _params_in(self, op: ops.Operation, params: dict[str, Any], loss: LossReport) -> Any:
        raise NotImplementedError

    def _params_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport,
                    tenant: str | None) -> Any:
        raise NotImplementedError

    def _result_in(self, op: ops.Operation, result: Any, loss: LossReport) -> Any:
        raise NotImplementedError

    def _result_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport) -> Any:
        raise NotImplementedError

    def _event_out(self, p10: dict[str, Any], final: bool, loss: LossReport) -> Any:
        raise NotImplementedError

    def error_body(self, err: A2AError) -> dict[str, Any]:
        raise NotImplementedError

    # ------------------------------------------------------------ client side

    def decode_params(self, op: ops.Operation, params: Any, loss: LossReport) -> ProtoMessage:
        """A client's params as the operation's canonical request."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise invalid_params("params must be an object")
        return parse_p10(self._params_in(op, params, loss), op.request)

    def encode_result(self, op: ops.Operation, result: ProtoMessage | None,
                      loss: LossReport) -> Any:
        if result is None:
            return None
        loss.answering = True
        return self._result_out(op, dump_p10(result), loss)

    def encode_event(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> Any:
        """One stream item; ``final`` is v0.3's flag (the stream encoder decides it)."""
        loss.answering = True
        return self._event_out(dump_p10(item), final, loss)

    def client(self, op: ops.Operation | None, request_id: str | int | None = None,
               media_type: str = JSON_MEDIA) -> JsonRpcClient:
        """One call's client side: its answers carry the id the client gave (JSON-RPC
        answers are always application/json)."""
        return JsonRpcClient(self, op, request_id)

    def failure(self, request_id: Any, err: A2AError) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": self.error_body(err)}

    # ------------------------------------------------------------ backend side

    def encode_params(self, op: ops.Operation, request: ProtoMessage, loss: LossReport,
                      tenant: str | None = None) -> Any:
        return self._params_out(op, dump_p10(request), loss, tenant)

    def backend(self, op: ops.Operation, request: ProtoMessage, loss: LossReport,
                tenant: str | None = None, card: dict[str, Any] | None = None,
                extensions: Sequence[str] = (), *, subscribe_verb: str = "POST",
                wire: WireRequest | None = None) -> JsonRpcBackend:
        """One call toward a backend (contract.Dialect.backend): the document, whose id
        is a fresh one of ours, or the client's own document and id (``wire``)."""
        if wire is not None:
            return JsonRpcBackend(self, op, request, loss, wire.rpc_id, (wire,))
        check_backend_card(op, request, card, extensions)
        sent_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": sent_id, "method": self.method(op)}
        params = self.encode_params(op, request, loss, tenant)
        refuse_losses(loss)
        if params is not None:
            body["params"] = params
        return JsonRpcBackend(self, op, request, loss, sent_id,
                              (WireRequest(dump_bytes(body), rpc_id=sent_id),))

    def decode_result(self, op: ops.Operation, result: Any, loss: LossReport,
                      request: ProtoMessage) -> ProtoMessage | None:
        """A backend's `result` as the canonical answer. Shape errors are the backend's
        (InvalidAgentResponseError), never the client's."""
        if op.response is None:
            return None
        return backend_answer(request, loss, lambda: parse_p10(
            self._result_in(op, result, loss), op.response,  # type: ignore[arg-type]
            error="InvalidAgentResponseError"))

    def decode_event(self, result: Any, loss: LossReport,
                     request: ProtoMessage) -> pb.StreamResponse:
        op = ops.BY_NAME[ops.STREAM]
        return backend_event(request, loss, lambda: parse_p10(
            self._result_in(op, result, loss), pb.StreamResponse,
            error="InvalidAgentResponseError"))


@dataclass(slots=True)  # not frozen: one per call (see WireRequest, dialects/contract.py)
class JsonRpcClient:
    """One JSON-RPC call's client side (a ClientCodec): every answer, event and error
    carries the id the client gave; an error is HTTP 200 unless it is about the
    transport (TRANSPORT_ERRORS)."""

    dialect: JsonRpcDialect
    op: ops.Operation | None
    request_id: str | int | None

    def answer(self, result: ProtoMessage | None, loss: LossReport) -> bytes:
        assert self.op is not None
        return dump_bytes(success(self.request_id,
                                  self.dialect.encode_result(self.op, result, loss)))

    def event_frame(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> bytes:
        return sse_frame(success(self.request_id, self.dialect.encode_event(item, final, loss)))

    def refusal(self, err: A2AError) -> HttpAnswer:
        status = err.kind.http if err.kind.name in TRANSPORT_ERRORS else 200
        return HttpAnswer(status, dump_bytes(self.dialect.failure(self.request_id, err)))

    def error_frame(self, err: A2AError) -> bytes:
        # An error inside a stream is one more data line with the same id (§3.8).
        return sse_frame(self.dialect.failure(self.request_id, err))


_REFUSED_BY_STATUS = {401: "UnauthenticatedError", 403: "PermissionDeniedError"}


def _is_rpc_error(raw: bytes) -> bool:
    body = json_object(raw)
    return body is not None and "error" in body


@dataclass(slots=True)  # not frozen: built per call (contract.WireRequest)
class JsonRpcBackend:
    """One JSON-RPC call's backend side (a BackendCodec): its document, and every answer
    and event read against the id it carries."""

    dialect: JsonRpcDialect
    op: ops.Operation
    request: ProtoMessage
    loss: LossReport
    sent_id: str | int | None
    requests: tuple[WireRequest, ...]

    def read(self, status: int, raw: bytes) -> ProtoMessage | None:
        # The status says nothing of its own: a JSON-RPC error travels with HTTP 200,
        # and what is not a JSON-RPC response is the backend's fault whatever it says —
        # except a refused credential, which the spec puts on the HTTP status on every
        # binding (401, 403), in front of the JSON-RPC layer.
        refused = _REFUSED_BY_STATUS.get(status)
        if refused is not None and not _is_rpc_error(raw):
            raise a2a_error(refused, f"the backend refused the call's credentials "
                            f"(HTTP {status})", http_status=status)
        result = read_answer(backend_json(raw, "the answer"), self.sent_id,
                             empty_ok=self.op.response is None)
        return self.dialect.decode_result(self.op, result, self.loss, self.request)

    def events(self, max_event_bytes: int) -> EventReader:
        return EventReader(self.dialect, self.sent_id, self.loss, self.request,
                           max_event_bytes)

    def forwarded(self, status: int, content_type: str, raw: bytes) -> WireAnswer | None:
        """A JSON-RPC result for the id sent, with HTTP 200."""
        body = json_object(raw) if status == 200 else None
        if body is None or body.get("jsonrpc") != "2.0" or "error" in body \
                or "result" not in body:
            return None
        answered = body.get("id")
        if answered != self.sent_id or isinstance(answered, bool):
            return None
        return WireAnswer(raw, document=body)


class EventReader(SseEventReader):
    """A backend's event stream: SSE frames of JSON-RPC responses, each one event."""

    def __init__(self, dialect: JsonRpcDialect, sent_id: str | int | None, loss: LossReport,
                 request: ProtoMessage, max_event_bytes: int) -> None:
        super().__init__(max_event_bytes)
        self._dialect, self._sent_id, self._loss, self._request = dialect, sent_id, loss, request

    def read_frame(self, frame: SseEvent) -> pb.StreamResponse:
        return self._dialect.decode_event(
            read_answer(backend_json(frame.data, "a stream event"), self._sent_id),
            self._loss, self._request)


class JsonRpc10(JsonRpcDialect):
    version = V10
    extension_header = "A2A-Extensions"

    def method(self, op: ops.Operation) -> str:
        return op.name

    def _params_in(self, op: ops.Operation, params: dict[str, Any], loss: LossReport) -> Any:
        return params

    def _params_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport,
                    tenant: str | None) -> Any:
        p10.pop("tenant", None)
        if tenant and has_tenant(op.request):
            p10["tenant"] = tenant
        return p10

    def _result_in(self, op: ops.Operation, result: Any, loss: LossReport) -> Any:
        return result

    def _result_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport) -> Any:
        return p10

    def _event_out(self, p10: dict[str, Any], final: bool, loss: LossReport) -> Any:
        return p10

    def error_body(self, err: A2AError) -> dict[str, Any]:
        return error_to_jsonrpc_v10(err)


class JsonRpc03(JsonRpcDialect):
    version = V03
    extension_header = "X-A2A-Extensions"

    def method(self, op: ops.Operation) -> str:
        if op.jsonrpc_v03 is None:
            raise ops.not_in_v03(op.name)
        return op.jsonrpc_v03

    def _params_in(self, op: ops.Operation, params: dict[str, Any], loss: LossReport) -> Any:
        return j03_rules(op.name).params_to_p10(params, loss)

    def _params_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport,
                    tenant: str | None) -> Any:
        self.method(op)  # refuses what v0.3 cannot express before anything is sent
        return j03_rules(op.name).params_to_j03(p10, loss)

    def _result_in(self, op: ops.Operation, result: Any, loss: LossReport) -> Any:
        return j03_rules(op.name).result_to_p10(result, loss)

    def _result_out(self, op: ops.Operation, p10: dict[str, Any], loss: LossReport) -> Any:
        return j03_rules(op.name).result_to_j03(p10, loss)

    def _event_out(self, p10: dict[str, Any], final: bool, loss: LossReport) -> Any:
        return stream_response_to_j03(p10, final, "result", loss)

    def error_body(self, err: A2AError) -> dict[str, Any]:
        return error_to_jsonrpc_v03(err)


JSONRPC_V10 = JsonRpc10()
JSONRPC_V03 = JsonRpc03()
# This binding\'s two rows of the registry (translators/dialects/__init__.py).
ROWS: Mapping[Version, JsonRpcDialect] = MappingProxyType({V10: JSONRPC_V10, V03: JSONRPC_V03})


def operation_for_method(method: str) -> tuple[ops.Operation, JsonRpcDialect] | None:
    """The operation a method name calls and the dialect it belongs to (names never
    overlap between versions, reference §1)."""
    op = ops.BY_JSONRPC_V03.get(method)
    if op is not None:
        return op, JSONRPC_V03
    op = ops.BY_NAME.get(method)
    return (op, JSONRPC_V10) if op is not None else None


# ---------------------------------------------------------------- the front door


def decode_call(body: bytes, declared: str | None, path_tenant: str | None,
                rules: VersionRules) -> DecodedCall[HttpAnswer]:
    """A client's JSON-RPC request, decoded: the envelope, the method (and so the version),
    the negotiated version, the params as the canonical request, checked, and its tenant.
    Refusal says how to answer what cannot be decoded."""
    fallback = ROWS[declared_version(declared)]
    try:
        parsed = parse_json(body)
    except A2AError as err:
        raise Refusal(err, fallback.client(None, None)) from None
    envelope = read_envelope(parsed.value, fallback)
    found = operation_for_method(envelope.method)
    if found is None:
        raise Refusal(a2a_error("MethodNotFoundError", f"Method not found: "
                                f"{envelope.method[:100]}"),
                      fallback.client(None, envelope.request_id))
    op, dialect = found
    loss = LossReport()
    try:
        negotiate(declared, dialect.version, rules)
        if parsed.bad_number is not None:
            raise number_refusal(parsed.bad_number)
        request = client_request(op, lambda: dialect.decode_params(op, envelope.params, loss))
        tenant = request_tenant(request, path_tenant)
    except A2AError as err:
        raise Refusal(err, dialect.client(op, envelope.request_id), op) from None
    return DecodedCall(op, dialect, dialect.client(op, envelope.request_id), request, loss,
                       tenant, WireRequest(body, rpc_id=envelope.request_id))
