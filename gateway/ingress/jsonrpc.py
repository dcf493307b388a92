"""JSON-RPC ingress: one endpoint (`POST /`, or `POST /{tenant}`) for v0.3 and v1.0.

decode (envelope → version → canonical call) · pipeline · encode (answer in the
client's dialect: JSON body, or SSE where every `data:` is a full JSON-RPC response).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gateway.call import Call
from gateway.ingress.common import (
    client_context,
    dialect_headers,
    gateway_of,
    header_version,
)
from gateway.ingress.sse_out import serve_sse
from gateway.observe import log_call
from gateway.sse import sse_frame
from translators import jsonrpc as rpc
from translators.errors import A2AError, a2a_error
from translators.versions import V03, V10, negotiate, normalize_version


def _reply(payload: dict[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    # JSON-RPC errors travel with HTTP 200 (reference §7.2).
    return web.json_response(payload, headers=headers,
                             dumps=lambda o: json.dumps(o, ensure_ascii=False))


def _fallback_version(request: web.Request) -> str:
    """The dialect to answer in before the method has told us the version."""
    return V10 if normalize_version(header_version(request)) == V10 else V03


async def handle(request: web.Request, path_tenant: str | None = None) -> web.StreamResponse:
    """`POST /`, or `POST /{tenant}` (then the REST router passes `path_tenant`)."""
    gateway = gateway_of(request)
    raw = await request.read()
    version = _fallback_version(request)
    try:
        body = json.loads(raw)
    except ValueError:
        return _reply(rpc.failure(None, a2a_error("JSONParseError"), version))
    if not isinstance(body, dict):
        message = "batch requests are not supported" if isinstance(body, list) else ""
        return _reply(rpc.failure(None, a2a_error("InvalidRequestError", message), version))
    rid = body.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int | None):
        rid = None
    method = body.get("method")
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _reply(rpc.failure(rid, a2a_error(
            "InvalidRequestError", "expected jsonrpc '2.0' and a string method"), version))
    found = rpc.operation_for_method(method)
    if found is None:
        return _reply(rpc.failure(rid, a2a_error(
            "MethodNotFoundError", f"Method not found: {method}", method=method), version))
    op, payload_version = found
    ctx = client_context(request, gateway, payload_version, rpc.JSONRPC)
    call: Call | None = None
    try:
        ctx.client_version = negotiate(header_version(request), payload_version,
                                       gateway.version_rules)
        canonical = rpc.params_to_canonical(op, payload_version, body.get("params"), ctx.loss)
        ctx.tenant = getattr(canonical, "tenant", "") or path_tenant or None
        call = Call(op, canonical, ctx)
        if op.streaming:
            return await _stream(request, call, rid)
        result = await gateway.unary(call)
        encoded = rpc.result_from_canonical(op, payload_version, result, ctx.loss)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return _reply(rpc.failure(rid, err, payload_version), dialect_headers(ctx))
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, op.name, exc)
        return _reply(rpc.failure(rid, a2a_error("InternalError"), payload_version))
    log_call(ctx, op.name, None)
    return _reply(rpc.success(rid, encoded), dialect_headers(ctx))


async def _stream(request: web.Request, call: Call, rid: Any) -> web.StreamResponse:
    version = call.ctx.client_version
    loss = call.ctx.loss

    def frame_item(item: Any, final: bool) -> bytes:
        result = rpc.stream_item_from_canonical(version, item, final, loss)
        return sse_frame(rpc.success(rid, result))

    def frame_error(err: A2AError) -> bytes:
        # An error inside a stream is one more data line with the same id (§3.8).
        return sse_frame(rpc.failure(rid, err, version))

    return await serve_sse(request, call, frame_item, frame_error)
