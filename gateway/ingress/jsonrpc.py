"""JSON-RPC ingress: one endpoint (`POST /`, or `POST /{tenant}`) for v0.3 and v1.0.

Bytes in, the JSON-RPC front door decodes them (translators/dialects/jsonrpc.py), the
pipeline runs the call, the client's dialect renders the answer: a JSON body, or SSE
where every `data:` is a full JSON-RPC response.
"""

from __future__ import annotations

from collections.abc import Awaitable

from aiohttp import web

from gateway.call import Call, CallContext
from gateway.http.request import ClientRequest
from gateway.ingress.common import (
    Reply,
    as_response,
    bind,
    client_context,
    declared_version,
    dialect_headers,
    gateway_of,
    header_version,
    read_body,
    refusal,
)
from gateway.ingress.common import refused as refused_response
from gateway.ingress.exit import Answered, refused, run_unary, unreadable
from gateway.ingress.sse_out import serve_sse
from gateway.pipeline.core import Gateway
from translators.dialects import jsonrpc as rpc
from translators.dialects.contract import HttpAnswer, Refusal
from translators.errors import A2AError


async def handle(request: web.Request) -> web.StreamResponse:
    """`POST /`, and `POST /{tenant}` (every served card lists `<base>/{tenant}/`)."""
    return await handle_body(request, request.match_info.get("tenant"), None)


class StreamNotServed(Exception):
    """A streaming call came to a caller that serves unary calls only (the fast lane),
    before anything of it was done."""


async def handle_body(request: web.Request, path_tenant: str | None,
                      body: bytes | None) -> web.StreamResponse:
    """A JSON-RPC request, its body read already when the REST router passed it on
    (`POST /{tenant}`)."""
    answer = await serve(request, path_tenant, body)
    return answer if isinstance(answer, web.StreamResponse) else as_response(answer)


async def serve(request: web.Request, path_tenant: str | None, body: bytes | None,
                ) -> Reply | web.StreamResponse:
    """The answer to a JSON-RPC request: a stream's response, served already, or the
    reply to write."""
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, rpc.JSONRPC)
    if body is None:
        try:
            body = await read_body(request, gateway)
        except A2AError as err:
            return _unreadable(request, ctx, err)
    decoded = _decode(request, gateway, ctx, path_tenant, body)
    if isinstance(decoded, Reply):
        return decoded
    call, codec = decoded
    if call.op.streaming:
        return await _stream(request, call, codec)
    return _reply(call, codec, await run_unary(gateway, call, codec))


async def serve_unary(request: ClientRequest, path_tenant: str | None, body: bytes) -> Reply:
    """The reply to a JSON-RPC request whose body is read (the fast lane, which writes
    replies only): a streaming call raises :class:`StreamNotServed` before anything of
    it is done."""
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, rpc.JSONRPC)
    decoded = _decode(request, gateway, ctx, path_tenant, body)
    if isinstance(decoded, Reply):
        return decoded
    call, codec = decoded
    if call.op.streaming:
        raise StreamNotServed
    return _reply(call, codec, await run_unary(gateway, call, codec))


def _decode(request: ClientRequest, gateway: Gateway, ctx: CallContext,
            path_tenant: str | None, body: bytes) -> tuple[Call, rpc.JsonRpcClient] | Reply:
    """The call ``body`` makes and its codec, or the refusal of a body that makes none."""
    try:
        decoded = rpc.decode_call(body, header_version(request), path_tenant,
                                  gateway.version_rules)
    except Refusal as no:
        # Every refused request leaves the line a served call does (a bad body too).
        return refusal(refused(ctx, no), no.error, ctx)
    except A2AError as err:
        return _unreadable(request, ctx, err)
    codec = decoded.codec
    assert isinstance(codec, rpc.JsonRpcClient)
    return bind(ctx, decoded), codec


def _unreadable(request: ClientRequest, ctx: CallContext, err: A2AError) -> Reply:
    """The refusal of a body that could not be read, in the version the request declared."""
    version = declared_version(request)
    unreadable(ctx, version, err)
    return refusal(rpc.ROWS[version].client(None, None).refusal(err), err, ctx)


def _reply(call: Call, codec: rpc.JsonRpcClient, out: Answered | A2AError) -> Reply:
    if isinstance(out, A2AError):
        return refusal(codec.refusal(out), out, call.ctx)
    return Reply(HttpAnswer(200, out.body), dialect_headers(call.ctx))


def _stream(request: web.Request, call: Call,
            codec: rpc.JsonRpcClient) -> Awaitable[web.StreamResponse]:
    # Not a coroutine of its own: each coroutine around a stream is resumed at each of
    # its waits (bench/README.md, "One stream driver").
    def answer_error(err: A2AError) -> web.StreamResponse | None:
        # The v0.3 SDK clients read a streaming method's answer as SSE only: an error
        # before the first event is one data line too (as the a2a-sdk 0.3 server sends
        # it), unless the HTTP status itself says it (401, 403, 429, 408, 413).
        if codec.dialect.version == "0.3" and err.kind.name not in rpc.TRANSPORT_ERRORS:
            return None
        return refused_response(codec.refusal(err), err, call.ctx)

    return serve_sse(request, call, codec, answer_error)
