"""The HTTP+JSON dialects: binding HTTP+JSON, versions 0.3 and 1.0 (reference §2, §3.8, §7).

A REST call is a route of rest_routes.py (the route says the version), path variables,
query parameters and a JSON body. v1.0 bodies are P10; v0.3 bodies are ProtoJSON of the
v0.3 proto (P03), read with the v0.3 messages and translated by translators/p03/. Errors
are an HTTP status with the version's body: google.rpc.Status for v1.0, `{"message"}`
for v0.3. Streams are SSE whose `data:` lines are bare StreamResponse objects, and an
error inside a stream is an `event: error` frame carrying the error body.
"""

from __future__ import annotations

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
    json_object,
    refuse_losses,
)
from translators.dialects.contract import JSON_MEDIA, HttpAnswer, Refusal
from translators.errors import A2AError, a2a_error, invalid_params
from translators.j03.common import iso_to_p10
from translators.j03.objects import STATE_J03_TO_P10
from translators.json_text import dump_bytes, number_refusal, parse_json
from translators.loss import LossReport
from translators.p03 import rest as p03_rest
from translators.p03.common import BytesMode
from translators.protojson import dump_p10, parse_p10
from translators.rest_errors import error_from_rest, error_to_rest
from translators.rest_routes import (
    Route,
    allowed_verbs,
    dialect_of_path,
    is_jsonrpc_path,
    match_route,
    query_string_values,
    query_values,
    route_for,
)
from translators.sse import SseEvent, sse_frame
from translators.tenancy import request_tenant
from translators.versions import V03, V10, Version, VersionRules, negotiate, normalize_version

HTTP_JSON: Final = "HTTP+JSON"
A2A_JSON = "application/a2a+json"


class IsJsonRpc(Exception):
    """`POST /{tenant}`: JSON-RPC with the tenant in the path, not a REST route."""

    def __init__(self, tenant: str | None) -> None:
        super().__init__(tenant)
        self.tenant = tenant


def _lenient_query(values: dict[str, Any]) -> dict[str, Any]:
    state = values.get("status")
    if isinstance(state, str) and not state.startswith("TASK_STATE_"):
        # Accept the v0.3 spellings too (`working`), as a courtesy to hand-written URLs.
        values["status"] = STATE_J03_TO_P10.get(state.lower(), state)
    if "statusTimestampAfter" in values:
        values["statusTimestampAfter"] = iso_to_p10(values["statusTimestampAfter"],
                                                    "statusTimestampAfter")
    return values


class RestDialect:
    """HTTP+JSON of one version; the version-specific pieces are the subclasses'."""

    binding: Final = HTTP_JSON
    version: Version
    extension_header = ""

    # ------------------------------------------------------------ per version

    def _request_in(self, route: Route, params: dict[str, str], data: dict[str, Any],
                    loss: LossReport) -> ProtoMessage:
        raise NotImplementedError

    def _body_out(self, route: Route, request: ProtoMessage, p10: dict[str, Any],
                  variables: dict[str, str], loss: LossReport) -> dict[str, Any] | None:
        raise NotImplementedError

    def _answer_in(self, op: ops.Operation, body: Any, loss: LossReport) -> ProtoMessage | None:
        raise NotImplementedError

    def _answer_out(self, op: ops.Operation, result: ProtoMessage, loss: LossReport) -> Any:
        raise NotImplementedError

    def _event_out(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------ client side

    def decode_request(self, route: Route, params: dict[str, str],
                       query: dict[str, list[str]], body: Any,
                       loss: LossReport) -> ProtoMessage:
        if body is not None and not isinstance(body, dict):
            raise invalid_params("the request body must be a JSON object")
        data: dict[str, Any] = dict(body) if route.body and body else {}
        data.update(_lenient_query(query_values(route, query)))
        return self._request_in(route, params, data, loss)

    def encode_result(self, op: ops.Operation, result: ProtoMessage | None,
                      loss: LossReport) -> Any:
        loss.answering = True
        if result is None:
            return {}  # google.protobuf.Empty (DELETE answers `{}`, reference §8.13)
        return self._answer_out(op, result, loss)

    def encode_event(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> Any:
        loss.answering = True
        return self._event_out(item, final, loss)

    def client(self, op: ops.Operation | None, request_id: str | int | None = None,
               media_type: str = JSON_MEDIA) -> RestClient:
        """One call's client side: its answers go in the media type the client used
        (REST has no request id)."""
        return RestClient(self, op, media_type)

    # ------------------------------------------------------------ backend side

    def backend(self, op: ops.Operation, request: ProtoMessage, loss: LossReport,
                tenant: str | None = None, card: dict[str, Any] | None = None,
                extensions: Sequence[str] = (), *, subscribe_verb: str = "POST",
                wire: WireRequest | None = None) -> RestBackend:
        """One call toward a backend (contract.Dialect.backend): the requests to try, in
        order: one, except subscribe, which tries the configured verb, then the other on
        405 (peers disagree on it, §2); or the client's own request (``wire``)."""
        if wire is not None:
            return RestBackend(self, op, request, loss, (wire,))
        check_backend_card(op, request, card, extensions)
        if op.name != ops.SUBSCRIBE:
            routes = [route_for(op.name, self.version)]
        else:
            second = "GET" if subscribe_verb == "POST" else "POST"
            routes = [route_for(op.name, self.version, subscribe_verb),
                      route_for(op.name, self.version, second)]
        tries = tuple(self._backend_call(route, request, loss, tenant, op.streaming)
                      for route in routes)
        refuse_losses(loss)
        return RestBackend(self, op, request, loss, tries)

    def _backend_call(self, route: Route, request: ProtoMessage, loss: LossReport,
                      tenant: str | None, stream: bool) -> WireRequest:
        p10 = dump_p10(request)
        variables = {name: str(p10.get(name, "")) for name in route.pattern.groupindex}
        query = query_string_values(route, p10)
        if stream:
            query["alt"] = "sse"  # gRPC-transcoding front ends answer arrays without it
        body = self._body_out(route, request, p10, variables, loss)
        if body is None and route.verb == "POST":
            body = {}  # `{}` rather than no body: some peers refuse an empty or null one
        prefix = f"/{tenant}" if tenant and self.version == V10 else ""
        # No body is b"": what dump_bytes writes is never empty.
        return WireRequest(b"" if body is None else dump_bytes(body), route.verb,
                           prefix + route.path_for(variables), tuple(query.items()))

    def decode_event(self, data: Any, loss: LossReport,
                     request: ProtoMessage) -> pb.StreamResponse:
        op = ops.BY_NAME[ops.STREAM]
        return backend_event(request, loss, lambda: self._answer_in(op, data, loss))


@dataclass(slots=True)  # not frozen: built per call (contract.WireRequest)
class RestBackend:
    """One HTTP+JSON call's backend side (a BackendCodec): the route tries, and how the
    answer reads (an error by its status and body, a result by the operation)."""

    dialect: RestDialect
    op: ops.Operation
    request: ProtoMessage
    loss: LossReport
    requests: tuple[WireRequest, ...]

    def read(self, status: int, raw: bytes) -> ProtoMessage | None:
        """The backend's error when the status says so, else the result."""
        if status >= 400:
            try:
                body = parse_json(raw).value if raw.strip() else None
            except A2AError:
                body = None  # an error page that is not JSON: the status says enough
            raise error_from_rest(status, body)
        data = backend_json(raw) if raw.strip() else {}
        op = self.op
        if op.response is None:
            return None
        return backend_answer(self.request, self.loss,
                              lambda: self.dialect._answer_in(op, data, self.loss))

    def events(self, max_event_bytes: int) -> EventReader:
        return EventReader(self.dialect, self.loss, self.request, max_event_bytes)

    def forwarded(self, status: int, content_type: str, raw: bytes) -> WireAnswer | None:
        """A JSON object with a success status."""
        document = json_object(raw) if status < 400 and "json" in content_type else None
        return None if document is None else WireAnswer(raw, status, document)


def stream_error(body: Any) -> A2AError:
    """The error an SSE `error` event of a REST stream carries. The event has no HTTP
    status of its own: a v1.0 body's google.rpc.Status says it, else the body's shape."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code < 600 else 500
    return error_from_rest(status, body)


@dataclass(frozen=True, slots=True)
class RestClient:
    """One HTTP+JSON call's client side (a ClientCodec): answers in the media type the
    client used; an error is the version's error document with its HTTP status, or in a
    stream an `event: error` frame."""

    dialect: RestDialect
    op: ops.Operation | None
    media_type: str

    def answer(self, result: ProtoMessage | None, loss: LossReport) -> bytes:
        assert self.op is not None
        return dump_bytes(self.dialect.encode_result(self.op, result, loss))

    def event_frame(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> bytes:
        return sse_frame(self.dialect.encode_event(item, final, loss))

    def refusal(self, err: A2AError) -> HttpAnswer:
        status, body = error_to_rest(err, self.dialect.version)
        return HttpAnswer(status, dump_bytes(body), content_type=self.media_type)

    def error_frame(self, err: A2AError) -> bytes:
        return sse_frame(error_to_rest(err, self.dialect.version)[1], event="error")


class EventReader(SseEventReader):
    """A REST backend's event stream: SSE frames of bare StreamResponse objects, and an
    `error` event for a failure mid-stream."""

    def __init__(self, dialect: RestDialect, loss: LossReport, request: ProtoMessage,
                 max_event_bytes: int) -> None:
        super().__init__(max_event_bytes)
        self._dialect, self._loss, self._request = dialect, loss, request

    def read_frame(self, frame: SseEvent) -> pb.StreamResponse:
        data = backend_json(frame.data)
        if frame.event == "error":
            raise stream_error(data)
        return self._dialect.decode_event(data, self._loss, self._request)


class Rest10(RestDialect):
    version = V10
    extension_header = "A2A-Extensions"

    def _request_in(self, route: Route, params: dict[str, str], data: dict[str, Any],
                    loss: LossReport) -> ProtoMessage:
        data.update(params)
        return parse_p10(data, ops.BY_NAME[route.op].request)

    def _body_out(self, route: Route, request: ProtoMessage, p10: dict[str, Any],
                  variables: dict[str, str], loss: LossReport) -> dict[str, Any] | None:
        if not route.body:
            return None
        return {k: v for k, v in p10.items() if k not in variables and k != "tenant"}

    def _answer_in(self, op: ops.Operation, body: Any, loss: LossReport) -> ProtoMessage | None:
        assert op.response is not None
        return parse_p10(body, op.response, error="InvalidAgentResponseError")

    def _answer_out(self, op: ops.Operation, result: ProtoMessage, loss: LossReport) -> Any:
        return dump_p10(result)

    def _event_out(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> Any:
        return dump_p10(item)


class Rest03(RestDialect):
    version = V03
    extension_header = "X-A2A-Extensions"

    def __init__(self, decode_bytes: BytesMode = "auto", encode_bytes: BytesMode = "double",
                 ) -> None:
        self.decode_bytes, self.encode_bytes = decode_bytes, encode_bytes

    def _request_in(self, route: Route, params: dict[str, str], data: dict[str, Any],
                    loss: LossReport) -> ProtoMessage:
        return p03_rest.request_to_canonical(route, params, data, loss,
                                             bytes_mode=self.decode_bytes)

    def _body_out(self, route: Route, request: ProtoMessage, p10: dict[str, Any],
                  variables: dict[str, str], loss: LossReport) -> dict[str, Any] | None:
        return p03_rest.body_from_canonical(route, request, loss, bytes_mode=self.encode_bytes)

    def _answer_in(self, op: ops.Operation, body: Any, loss: LossReport) -> ProtoMessage | None:
        return p03_rest.result_to_canonical(op, body, loss, bytes_mode=self.decode_bytes)

    def _answer_out(self, op: ops.Operation, result: ProtoMessage, loss: LossReport) -> Any:
        return p03_rest.result_from_canonical(op, result, loss, bytes_mode=self.encode_bytes)

    def _event_out(self, item: pb.StreamResponse, final: bool, loss: LossReport) -> Any:
        return p03_rest.stream_item_from_canonical(item, final, loss,
                                                   bytes_mode=self.encode_bytes)


REST_V10 = Rest10()
REST_V03 = Rest03()
# This binding\'s two rows of the registry (translators/dialects/__init__.py).
ROWS: Mapping[Version, RestDialect] = MappingProxyType({V10: REST_V10, V03: REST_V03})


def media_type(content_type: str, accept: str) -> str:
    # v1.0 SHOULD use application/a2a+json; answer in the type the client used.
    return A2A_JSON if A2A_JSON in content_type + accept else "application/json"


def decode_call(verb: str, path: str, query: dict[str, list[str]], body: bytes,
                declared: str | None, rules: VersionRules, content_type: str = "",
                accept: str = "") -> DecodedCall[HttpAnswer]:
    """A client's REST request, decoded (route, version, the canonical request, checked,
    its tenant). IsJsonRpc for `POST /{tenant}`; Refusal says how to answer the rest."""
    media = media_type(content_type, accept)
    version = normalize_version(declared)
    match = match_route(verb, path, version)
    if match is None:
        if verb == "POST" and is_jsonrpc_path(path):
            raise IsJsonRpc(path.strip("/") or None)
        dialect = ROWS[dialect_of_path(path, version)]
        shown = path if len(path) <= 200 else path[:200] + "..."
        allowed = allowed_verbs(path, version)
        if allowed:
            raise Refusal(a2a_error("MethodNotAllowedError",
                                    f"{verb[:16]} is not allowed on {shown}"),
                          dialect.client(None, media_type=media),
                          headers={"Allow": ", ".join(sorted(allowed))})
        raise Refusal(a2a_error("MethodNotFoundError", f"no A2A route for {verb[:16]} {shown}"),
                      dialect.client(None, media_type=media))
    route = match.route
    op = ops.BY_NAME[route.op]
    dialect = ROWS[route.version]
    loss = LossReport()
    try:
        negotiate(declared, route.version, rules)
        data: Any = None
        if route.body and body.strip():
            parsed = parse_json(body)
            if parsed.bad_number is not None:
                raise number_refusal(parsed.bad_number)
            data = parsed.value
        request = client_request(op, lambda: dialect.decode_request(
            route, match.params, query, data, loss))
        tenant = request_tenant(request, match.tenant)
    except A2AError as err:
        raise Refusal(err, dialect.client(op, media_type=media), op) from None
    below = path[len(match.tenant) + 1:] if match.tenant else path
    wire = WireRequest(body, verb, below, tuple((k, v) for k, vs in query.items() for v in vs))
    return DecodedCall(op, dialect, dialect.client(op, media_type=media), request, loss, tenant, wire)
