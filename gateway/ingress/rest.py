"""HTTP+JSON ingress: the v0.3 (`/v1/...`) and v1.0 (`/...`, `/{tenant}/...`) routes.

Bytes in, the REST front door (translators/dialects/rest.py) matches the route and
decodes the call, the pipeline runs it, the client's dialect renders the answer: a JSON
body, or SSE whose `data:` lines are bare StreamResponse objects. `POST /{tenant}` is
JSON-RPC with the tenant in the path: handed to the JSON-RPC ingress.
"""

from __future__ import annotations

from collections.abc import Awaitable

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
)
from gateway.ingress.common import refused as refused_response
from gateway.ingress.errors import render_error
from gateway.ingress.exit import refused, run_unary, unreadable
from gateway.ingress.sse_out import serve_sse
from translators.dialects import rest
from translators.dialects.contract import HttpAnswer, Refusal
from translators.errors import A2AError
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
    except Refusal as no:
        # Every refused request leaves the line a served call does (no route too).
        response = refused_response(refused(ctx, no), no.error, ctx)
        response.headers.update(no.headers)
        return response
    except A2AError as err:  # the body could not be read: the path says the dialect
        unreadable(ctx, dialect_of_path(request.path, normalize_version(
            header_version(request))), err)
        response = render_error(request, err)
        response.headers.update(dialect_headers(ctx))
        # Too large, too slow or not decodable: what is left of the body on the
        # connection cannot be told from a next request.
        response.force_close()
        return response
    codec = decoded.codec
    assert isinstance(codec, rest.RestClient)
    call = bind(ctx, decoded)
    if call.op.streaming:
        return await _stream(request, call, codec)
    out = await run_unary(gateway, call, codec)
    if isinstance(out, A2AError):
        return refused_response(codec.refusal(out), out, ctx)
    return http_answer(HttpAnswer(out.status, out.body, content_type=codec.media_type),
                       dialect_headers(ctx))


def _stream(request: web.Request, call: Call,
            codec: rest.RestClient) -> Awaitable[web.StreamResponse]:
    # Not a coroutine of its own: each coroutine around a stream is resumed at each of
    # its waits (bench/README.md, "One stream driver").
    return serve_sse(request, call, codec,
                     lambda err: refused_response(codec.refusal(err), err, call.ctx))
