"""JSON-RPC ingress: one endpoint (`POST /`, or `POST /{tenant}`) for v0.3 and v1.0.

Bytes in, the JSON-RPC front door decodes them (translators/dialects/jsonrpc.py), the
pipeline runs the call, the client's dialect renders the answer: a JSON body, or SSE
where every `data:` is a full JSON-RPC response.
"""

from __future__ import annotations

from collections.abc import Awaitable
from functools import partial

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
    refused,
)
from gateway.ingress.sse_out import serve_sse
from gateway.observability.observe import log_call
from gateway.pipeline.core import Gateway
from translators import operations as ops
from translators.dialects import jsonrpc as rpc
from translators.dialects.base import HttpAnswer, WireAnswer
from translators.errors import A2AError, a2a_error


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
    call = _decode(request, gateway, ctx, path_tenant, body)
    if isinstance(call, Reply):
        return call
    if call.op.streaming:
        return await _stream(request, call)
    return await _unary(gateway, call)


async def serve_unary(request: ClientRequest, path_tenant: str | None, body: bytes) -> Reply:
    """The reply to a JSON-RPC request whose body is read (the fast lane, which writes
    replies only): a streaming call raises :class:`StreamNotServed` before anything of
    it is done."""
    gateway = gateway_of(request)
    ctx = client_context(request, gateway, rpc.JSONRPC)
    call = _decode(request, gateway, ctx, path_tenant, body)
    if isinstance(call, Reply):
        return call
    if call.op.streaming:
        raise StreamNotServed
    return await _unary(gateway, call)


def _decode(request: ClientRequest, gateway: Gateway, ctx: CallContext,
            path_tenant: str | None, body: bytes) -> Call | Reply:
    """The call ``body`` makes, or the refusal of a body that makes none."""
    try:
        decoded = rpc.decode_call(body, header_version(request), path_tenant,
                                  gateway.version_rules)
    except rpc.Refusal as no:
        # Every refused request leaves the line a served call does (a bad body too).
        ctx.client_version = no.dialect.version
        log_call(ctx, no.op.name if no.op is not None else ops.UNKNOWN, no.error)
        return refusal(no.dialect.refusal(no.request_id, no.error), no.error, ctx)
    except A2AError as err:
        return _unreadable(request, ctx, err)
    return bind(ctx, decoded)


def _unreadable(request: ClientRequest, ctx: CallContext, err: A2AError) -> Reply:
    """The refusal of a body that could not be read, in the version the request declared."""
    fallback = rpc.JSONRPC_V10 if declared_version(request) == "1.0" else rpc.JSONRPC_V03
    ctx.client_version = fallback.version
    log_call(ctx, ops.UNKNOWN, err)
    return refusal(fallback.refusal(None, err), err, ctx)


async def _unary(gateway: Gateway, call: Call) -> Reply:
    ctx = call.ctx
    try:
        result = await gateway.unary(call)
        answer = (result.body if isinstance(result, WireAnswer)
                  else call.dialect.answer(call.request_id, call.op, result, ctx.loss))
    except A2AError as err:
        log_call(ctx, call.op.name, err)
        return refusal(call.dialect.refusal(call.request_id, err), err, ctx)
    except Exception as exc:  # a bug of ours: answer in the client's dialect, keep serving
        log_call(ctx, call.op.name, exc)
        internal = a2a_error("InternalError")
        return refusal(call.dialect.refusal(call.request_id, internal), internal, ctx)
    log_call(ctx, call.op.name, None)
    return Reply(HttpAnswer(200, answer), dialect_headers(ctx))


def _stream(request: web.Request, call: Call) -> Awaitable[web.StreamResponse]:
    # Not a coroutine of its own: each coroutine around a stream is resumed at each of
    # its waits (bench/README.md, "One stream driver").
    dialect, rid, loss = call.dialect, call.request_id, call.ctx.loss

    def answer_error(err: A2AError) -> web.StreamResponse | None:
        # The v0.3 SDK clients read a streaming method's answer as SSE only: an error
        # before the first event is one data line too (as the a2a-sdk 0.3 server sends
        # it), unless the HTTP status itself says it (401, 403, 429, 408, 413).
        if dialect.version == "0.3" and err.kind.name not in rpc.TRANSPORT_ERRORS:
            return None
        return refused(dialect.refusal(rid, err), err, call.ctx)

    return serve_sse(
        request, call, partial(dialect.event_frame, rid, loss=loss),  # no Python frame of its own
        lambda err: dialect.error_frame(rid, err), answer_error)
