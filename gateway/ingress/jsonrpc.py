"""JSON-RPC ingress: one endpoint (`POST /`, or `POST /{tenant}`) for v0.3 and v1.0.

decode (envelope → version → canonical call) · pipeline · encode (answer in the
client's dialect: JSON body, or SSE where every `data:` is a full JSON-RPC response).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.call import Call
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
from translators import jsonrpc as rpc
from translators.errors import A2AError, a2a_error
from translators.json_text import dumps, number_refusal, parse_json
from translators.tenancy import request_tenant
from translators.versions import V03, V10, negotiate, normalize_version


def _reply(payload: dict[str, Any], headers: dict[str, str] | None = None,
           status: int = 200) -> web.Response:
    # JSON-RPC errors travel with HTTP 200 (reference §7.2), except those about the
    # transport itself (a body too large or too slow), which the JSON-RPC layer never saw.
    response = web.Response(text=dumps(payload), status=status, headers=headers,
                            content_type="application/json")
    if status != 200:
        response.force_close()
    return response


def _failure(rid: Any, err: A2AError, version: str,
             headers: dict[str, str] | None = None) -> web.Response:
    status = err.kind.http if err.kind.name in CLOSES_CONNECTION else 200
    return _reply(rpc.failure(rid, err, version), error_headers(err, headers), status)


def _fallback_version(request: web.Request) -> str:
    """The dialect to answer in before the method has told us the version."""
    return V10 if normalize_version(header_version(request)) == V10 else V03


async def handle(request: web.Request, path_tenant: str | None = None) -> web.StreamResponse:
    """`POST /`, or `POST /{tenant}` (then the REST router passes `path_tenant`)."""
    gateway = gateway_of(request)
    version = _fallback_version(request)
    try:
        parsed = parse_json(await read_body(request, gateway))
        envelope = rpc.read_envelope(parsed.value)
    except A2AError as err:
        return _failure(None, err, version)
    except rpc.EnvelopeError as bad:
        return _failure(bad.request_id, bad.error, version)
    rid = envelope.request_id
    found = rpc.operation_for_method(envelope.method)
    if found is None:
        return _failure(rid, a2a_error("MethodNotFoundError",
                                       f"Method not found: {envelope.method[:100]}"), version)
    op, payload_version = found
    ctx = client_context(request, gateway, payload_version, rpc.JSONRPC)
    call: Call | None = None
    try:
        ctx.client_version = negotiate(header_version(request), payload_version,
                                       gateway.version_rules)
        if parsed.bad_number is not None:
            raise number_refusal(parsed.bad_number)
        canonical = rpc.params_to_canonical(op, payload_version, envelope.params, ctx.loss)
        ctx.tenant = request_tenant(canonical, path_tenant)
        call = Call(op, canonical, ctx)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return _failure(rid, err, payload_version, dialect_headers(ctx))
    if op.streaming:
        return await _stream(request, call, rid)
    try:
        result = await gateway.unary(call)
        encoded = rpc.result_from_canonical(op, payload_version, result, ctx.loss)
    except A2AError as err:
        log_call(ctx, op.name, err)
        return _failure(rid, err, payload_version, dialect_headers(ctx))
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, op.name, exc)
        return _failure(rid, a2a_error("InternalError"), payload_version, dialect_headers(ctx))
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

    def answer_error(err: A2AError) -> web.StreamResponse:
        return _failure(rid, err, version, dialect_headers(call.ctx))

    # The v0.3 SDK clients read a streaming method's answer as SSE only: an error before
    # the first event is one data line too (as the a2a-sdk 0.3 server sends it).
    return await serve_sse(request, call, frame_item, frame_error,
                           answer_error=None if version == V03 else answer_error)
