"""HTTP+JSON ingress: the v0.3 (`/v1/...`) and v1.0 (`/...`, `/{tenant}/...`) routes.

One router reads the route table in translators/rest_routes.py; everything else is the
same flow as JSON-RPC: decode to a canonical call, run it, encode the answer (JSON, or
SSE whose `data:` lines are bare StreamResponse objects).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.call import Call
from gateway.ingress import jsonrpc
from gateway.ingress.common import (
    CLOSES_CONNECTION,
    client_context,
    dialect_headers,
    error_headers,
    gateway_of,
    header_version,
    read_body,
)
from gateway.ingress.sse_out import serve_sse
from gateway.observe import log_call
from gateway.sse import sse_frame
from translators import operations as ops
from translators import rest
from translators.errors import A2AError, a2a_error
from translators.json_text import dumps, number_refusal, parse_json
from translators.rest_errors import error_to_rest
from translators.rest_routes import allowed_verbs, dialect_of_path, is_jsonrpc_path, match_route
from translators.tenancy import request_tenant
from translators.versions import negotiate, normalize_version


def _content_type(request: web.Request) -> str:
    # v1.0 SHOULD use application/a2a+json; answer in the type the client used.
    sent = request.headers.get("Content-Type", "") + request.headers.get("Accept", "")
    return "application/a2a+json" if "application/a2a+json" in sent else "application/json"


def _json(request: web.Request, status: int, payload: Any,
          headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, headers=headers, content_type=_content_type(request),
                        text=dumps(payload))


def error_response(request: web.Request, err: A2AError, version: str,
                   headers: dict[str, str] | None = None) -> web.Response:
    status, body = error_to_rest(err, version)
    response = _json(request, status, body, error_headers(err, headers))
    if err.kind.name in CLOSES_CONNECTION:
        response.force_close()
    return response


async def _body(request: web.Request) -> tuple[Any, str | None]:
    raw = await read_body(request, gateway_of(request))
    if not raw.strip():
        return None, None
    parsed = parse_json(raw)
    return parsed.value, parsed.bad_number


def _unmatched(request: web.Request, declared: str) -> web.Response:
    """No route: 405 with Allow when another verb would match, else 404, in the dialect
    the path speaks."""
    version = dialect_of_path(request.path, declared)
    allowed = allowed_verbs(request.path, declared)
    shown = request.path if len(request.path) <= 200 else request.path[:200] + "..."
    if allowed:
        err = a2a_error("MethodNotAllowedError",
                        f"{request.method[:16]} is not allowed on {shown}")
        response = error_response(request, err, version)
        response.headers["Allow"] = ", ".join(sorted(allowed))
        return response
    err = a2a_error("MethodNotFoundError", f"no A2A route for {request.method[:16]} {shown}")
    return error_response(request, err, version)


async def handle(request: web.Request) -> web.StreamResponse:
    declared = normalize_version(header_version(request))
    match = match_route(request.method, request.path, declared)
    if match is None:
        if request.method == "POST" and is_jsonrpc_path(request.path):
            return await jsonrpc.handle(request, request.path.strip("/") or None)
        return _unmatched(request, declared)
    route = match.route
    op = ops.BY_NAME[route.op]
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, route.version, rest.HTTP_JSON)
    try:
        ctx.client_version = negotiate(header_version(request), route.version,
                                       gateway.version_rules)
        body, bad_number = await _body(request) if route.body else (None, None)
        if bad_number is not None:
            raise number_refusal(bad_number)
        canonical = rest.request_to_canonical(route, match.params, dict(
            (k, request.query.getall(k)) for k in request.query), body, ctx.loss,
            **gateway.p03_options)
        ctx.tenant = request_tenant(canonical, match.tenant)
        call = Call(op, canonical, ctx)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return error_response(request, err, route.version, dialect_headers(ctx))
    if op.streaming:
        return await _stream(request, call)
    try:
        result = await gateway.unary(call)
        encoded = rest.result_from_canonical(op, route.version, result, ctx.loss,
                                             **gateway.p03_options)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return error_response(request, err, route.version, dialect_headers(ctx))
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, op.name, exc)
        return error_response(request, a2a_error("InternalError"), route.version,
                              dialect_headers(ctx))
    log_call(ctx, op.name, None)
    return _json(request, 200, encoded, dialect_headers(ctx))


async def _stream(request: web.Request, call: Call) -> web.StreamResponse:
    version = call.ctx.client_version
    loss = call.ctx.loss
    options = gateway_of(request).p03_options

    def frame_item(item: Any, final: bool) -> bytes:
        return sse_frame(rest.stream_item_from_canonical(version, item, final, loss, **options))

    def frame_error(err: A2AError) -> bytes:
        # An error inside a REST stream is an `error` event with the error body (§3.8).
        return sse_frame(error_to_rest(err, version)[1], event="error")

    def answer_error(err: A2AError) -> web.StreamResponse:
        return error_response(request, err, version, dialect_headers(call.ctx))

    return await serve_sse(request, call, frame_item, frame_error, answer_error)
