"""HTTP+JSON ingress: the v0.3 (`/v1/...`) and v1.0 (`/...`, `/{tenant}/...`) routes.

Bytes in, the REST front door (translators/dialects/rest.py) matches the route and
decodes the call, the pipeline runs it, the client's dialect renders the answer: a JSON
body, or SSE whose `data:` lines are bare StreamResponse objects. `POST /{tenant}` is
JSON-RPC with the tenant in the path: handed to the JSON-RPC ingress.
"""

from __future__ import annotations

from collections.abc import Awaitable
from functools import partial

from aiohttp import web

from gateway.call import Call
from gateway.ingress import jsonrpc
from gateway.ingress.common import (
    bind,
    client_context,
    dialect_headers,
    gateway_of,
    header_version,
    http_answer,
    read_body,
    refused,
)
from gateway.ingress.errors import render_error
from gateway.ingress.sse_out import serve_sse
from gateway.observability.observe import log_call
from translators import operations as ops
from translators.dialects import rest
from translators.dialects.base import HttpAnswer, WireAnswer
from translators.errors import A2AError, a2a_error
from translators.rest_routes import dialect_of_path
from translators.versions import normalize_version


async def handle(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, rest.HTTP_JSON)
    headers = request.headers
    try:
        body = await read_body(request, gateway)
        decoded = rest.decode_call(request.method, request.path, {
            k: request.query.getall(k) for k in request.query}, body, header_version(request),
            gateway.version_rules, headers.get("Content-Type", ""), headers.get("Accept", ""))
    except rest.IsJsonRpc as jsonrpc_call:
        return await jsonrpc.handle_body(request, jsonrpc_call.tenant, body)
    except rest.Refusal as no:
        # Every refused request leaves the line a served call does (no route too).
        ctx.client_version = no.dialect.version
        log_call(ctx, no.op.name if no.op is not None else ops.UNKNOWN, no.error)
        response = refused(_typed(no.dialect.refusal(no.error), no.media_type), no.error, ctx)
        if no.allow:
            response.headers["Allow"] = ", ".join(sorted(no.allow))
        return response
    except A2AError as err:  # the body could not be read: the path says the dialect
        ctx.client_version = dialect_of_path(request.path, normalize_version(
            header_version(request)))
        log_call(ctx, ops.UNKNOWN, err)
        response = render_error(request, err)
        response.headers.update(dialect_headers(ctx))
        # Too large, too slow or not decodable: what is left of the body on the
        # connection cannot be told from a next request.
        response.force_close()
        return response
    call = bind(ctx, decoded)
    if call.op.streaming:
        return await _stream(request, call, decoded.media_type)
    try:
        result = await gateway.unary(call)
        if isinstance(result, WireAnswer):
            answer = HttpAnswer(result.status, result.body, content_type=decoded.media_type)
        else:
            answer = HttpAnswer(200, call.dialect.answer(call.op, result, ctx.loss),
                                content_type=decoded.media_type)
    except A2AError as err:
        log_call(ctx, call.op.name, err)
        return refused(_typed(call.dialect.refusal(err), decoded.media_type), err, ctx)
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, call.op.name, exc)
        internal = a2a_error("InternalError")
        return refused(_typed(call.dialect.refusal(internal), decoded.media_type), internal, ctx)
    log_call(ctx, call.op.name, None)
    return http_answer(answer, dialect_headers(ctx))


def _typed(answer: HttpAnswer, media: str) -> HttpAnswer:
    return HttpAnswer(answer.status, answer.body, answer.headers, media)


def _stream(request: web.Request, call: Call, media: str) -> Awaitable[web.StreamResponse]:
    # Not a coroutine of its own: each coroutine around a stream is resumed at each of
    # its waits (bench/README.md, "One stream driver").
    dialect, loss = call.dialect, call.ctx.loss
    return serve_sse(
        request, call, partial(dialect.event_frame, loss=loss),  # no Python frame of its own
        dialect.error_frame,
        lambda err: refused(_typed(dialect.refusal(err), media), err, call.ctx))
