"""HTTP+JSON ingress: the v0.3 (`/v1/...`) and v1.0 (`/...`, `/{tenant}/...`) routes.

One router reads the route table in translators/rest_routes.py; everything else is the
same flow as JSON-RPC: decode to a canonical call, run it, encode the answer (JSON, or
SSE whose `data:` lines are bare StreamResponse objects).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gateway.call import Call
from gateway.ingress import jsonrpc
from gateway.ingress.common import client_context, dialect_headers, gateway_of, header_version
from gateway.ingress.sse_out import serve_sse
from gateway.observe import log_call
from gateway.sse import sse_frame
from translators import operations as ops
from translators import rest
from translators.errors import A2AError, a2a_error
from translators.rest_errors import error_to_rest
from translators.rest_routes import allowed_verbs, dialect_of_path, match_route
from translators.versions import negotiate, normalize_version


def _content_type(request: web.Request) -> str:
    # v1.0 SHOULD use application/a2a+json; answer in the type the client used.
    sent = request.headers.get("Content-Type", "") + request.headers.get("Accept", "")
    return "application/a2a+json" if "application/a2a+json" in sent else "application/json"


def _json(request: web.Request, status: int, payload: Any,
          headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, headers=headers, content_type=_content_type(request),
                        text=json.dumps(payload, ensure_ascii=False))


def _error(request: web.Request, err: A2AError, version: str,
           headers: dict[str, str] | None = None) -> web.Response:
    status, body = error_to_rest(err, version)
    return _json(request, status, body, headers)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise a2a_error("JSONParseError") from None


async def handle(request: web.Request) -> web.StreamResponse:
    declared = normalize_version(header_version(request))
    match = match_route(request.method, request.path, declared)
    if match is None:
        if request.method == "POST" and request.path.count("/") <= 2 \
                and ":" not in request.path:
            # JSON-RPC with the tenant in the path: POST /{tenant}
            return await jsonrpc.handle(request, request.path.strip("/") or None)
        # `/v1/...` and `/{tenant}/v1/...` are v0.3 routes unless the client says 1.x.
        fallback = dialect_of_path(request.path, declared)
        allowed = allowed_verbs(request.path, declared)
        if allowed:
            err = a2a_error("MethodNotFoundError",
                            f"{request.method} is not allowed on {request.path}")
            response = _error(request, err, fallback)
            response.set_status(405)
            response.headers["Allow"] = ", ".join(sorted(allowed))
            return response
        err = a2a_error("MethodNotFoundError", f"no A2A route for {request.method} "
                        f"{request.path}", path=request.path)
        return _error(request, err, fallback)
    route = match.route
    op = ops.BY_NAME[route.op]
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, route.version, rest.HTTP_JSON)
    try:
        ctx.client_version = negotiate(header_version(request), route.version,
                                       gateway.version_rules)
        body = await _body(request) if route.body else None
        canonical = rest.request_to_canonical(route, match.params, dict(
            (k, request.query.getall(k)) for k in request.query), body, ctx.loss,
            **gateway.p03_options)
        ctx.tenant = match.tenant or getattr(canonical, "tenant", "") or None
        call = Call(op, canonical, ctx)
        if op.streaming:
            return await _stream(request, call)
        result = await gateway.unary(call)
        encoded = rest.result_from_canonical(op, route.version, result, ctx.loss,
                                             **gateway.p03_options)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return _error(request, err, route.version, dialect_headers(ctx))
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, op.name, exc)
        return _error(request, a2a_error("InternalError"), route.version)
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

    return await serve_sse(request, call, frame_item, frame_error)
