"""The demo agent's aiohttp application: JSON-RPC 2.0 at POST / with SSE streams, and the
agent card. v0.3 is served here; `--protocol 1.0` mounts gateway.demo.v10 instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from gateway.demo import v10
from gateway.demo.card import public_card
from gateway.demo.engine import Engine
from gateway.demo.methods import (
    ENGINE_KEY,
    PUSH_KEY,
    STREAMING,
    TIMING_KEY,
    UNARY,
    base_url,
    context,
)
from gateway.demo.options import PROTOCOLS, Protocol
from gateway.demo.push import PushSender, render_v03
from gateway.demo.skills import Timing
from gateway.demo.streams import serve_events, serve_one_frame
from gateway.demo.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    failure,
    success,
)

logger = logging.getLogger(__name__)


def _reply(body: JSON) -> web.Response:
    # JSON-RPC errors travel with HTTP 200 too, as in the reference SDKs.
    return web.json_response(body)


def _request_id(payload: Any) -> Any:
    """The id to answer with; None when the request's own id is unusable."""
    if not isinstance(payload, dict):
        return None
    request_id = payload.get("id")
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    return None


def _envelope(payload: Any) -> tuple[str, Any]:
    if not isinstance(payload, dict):
        # Batches are legal JSON-RPC but no A2A client sends them.
        raise RpcError(INVALID_REQUEST, "Request payload validation error: expected a JSON object")
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, "Request payload validation error: jsonrpc must be '2.0'")
    method = payload.get("method")
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, "Request payload validation error: method must be a string")
    if "id" in payload and payload["id"] is not None and _request_id(payload) is None:
        raise RpcError(
            INVALID_REQUEST, "Request payload validation error: id must be a string or integer"
        )
    return method, payload.get("params")


def _frame(body: JSON) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def handle_rpc(request: web.Request) -> web.StreamResponse:
    try:
        payload = json.loads(await request.read())
    # Deeply nested input hits the recursion limit instead of a JSON error.
    except (ValueError, RecursionError):
        return _reply(failure(None, RpcError(PARSE_ERROR, "Invalid JSON payload")))
    request_id = _request_id(payload)
    try:
        method, raw = _envelope(payload)
    except RpcError as error:
        return _reply(failure(request_id, error))

    ctx = context(request)
    if method in STREAMING:
        try:
            events = STREAMING[method](ctx, raw)
        except RpcError as error:
            # Like py@v0.3.26: malformed params get a plain JSON reply, while A2A
            # errors (unknown task, ...) arrive as an event the SSE client can read.
            if error.code == INVALID_PARAMS:
                return _reply(failure(request_id, error))
            return await serve_one_frame(request, _frame(failure(request_id, error)))
        except Exception:
            logger.exception("demo agent failed on %s", method)
            internal = RpcError(INTERNAL_ERROR, "Internal error")
            return await serve_one_frame(request, _frame(failure(request_id, internal)))
        return await serve_events(request, events, lambda event: _frame(success(request_id, event)))

    handler = UNARY.get(method)
    if handler is None:
        return _reply(
            failure(request_id, RpcError(METHOD_NOT_FOUND, f"Method not found: {method}"))
        )
    try:
        result = await handler(ctx, raw)
    except RpcError as error:
        return _reply(failure(request_id, error))
    # Never let a bug turn into an HTML 500 a JSON-RPC client cannot parse.
    except Exception:
        logger.exception("demo agent failed on %s", method)
        return _reply(failure(request_id, RpcError(INTERNAL_ERROR, "Internal error")))
    return _reply(success(request_id, result))


async def handle_card(request: web.Request) -> web.Response:
    return web.json_response(public_card(base_url(request)))


async def _push_lifecycle(app: web.Application) -> AsyncIterator[None]:
    await app[PUSH_KEY].start()
    yield
    await app[PUSH_KEY].stop()


async def _stop_work(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for in-flight requests, so ending
    # background work here lets blocked sends and open streams finish promptly.
    await app[ENGINE_KEY].shutdown()


def build_app(
    *,
    protocol: Protocol = "0.3",
    answer_variant: str | None = None,
    chunk_interval: float = 0.05,
    slow_seconds: float = 30.0,
    push_timeout: float = 5.0,
) -> web.Application:
    """The demo agent as an aiohttp application, speaking ``protocol`` and answering as
    ``answer_variant`` says (gateway.demo.variants); the other arguments exist for tests."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"the demo agent speaks A2A {' or '.join(PROTOCOLS)}, not {protocol!r}")
    push = PushSender(push_timeout, render_v03 if protocol == "0.3" else v10.render_push)
    app = web.Application()
    app[PUSH_KEY] = push
    app[ENGINE_KEY] = Engine(push, answer_variant)
    app[TIMING_KEY] = Timing(chunk_interval=chunk_interval, slow_seconds=slow_seconds)
    if protocol == "1.0":
        app.router.add_post("/", v10.handle_rpc)
        app.router.add_get("/.well-known/agent-card.json", v10.handle_card)
    else:
        app.router.add_post("/", handle_rpc)
        app.router.add_get("/.well-known/agent-card.json", handle_card)
        # The v0.2 name, still served by py@v0.3.26 for older clients.
        app.router.add_get("/.well-known/agent.json", handle_card)
    app.cleanup_ctx.append(_push_lifecycle)
    app.on_shutdown.append(_stop_work)
    return app
