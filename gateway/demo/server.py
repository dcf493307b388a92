"""The demo agent's aiohttp application: v0.3 JSON-RPC 2.0 at POST / with SSE streams."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.demo import params
from gateway.demo.card import extended_card, public_card
from gateway.demo.engine import Engine, Subscription
from gateway.demo.push import PushSender
from gateway.demo.skills import Timing, accept
from gateway.demo.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    TERMINAL_STATES,
    RpcError,
    failure,
    invalid_params,
    success,
)

logger = logging.getLogger(__name__)

# An SSE comment now and then lets proxies keep idle streams (a 30 s `slow` task)
# open, and makes writes fail soon after a client has gone away.
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class Context:
    engine: Engine
    timing: Timing
    base_url: str


ENGINE_KEY = web.AppKey("demo_engine", Engine)
PUSH_KEY = web.AppKey("demo_push", PushSender)
TIMING_KEY = web.AppKey("demo_timing", Timing)

Unary = Callable[[Context, Any], Awaitable[Any]]
Streaming = Callable[[Context, Any], Subscription]


# --- unary methods -------------------------------------------------------------


async def _send(ctx: Context, raw: Any) -> Any:
    send = params.send_params(raw)
    outcome = accept(ctx.engine, send, ctx.timing)
    if isinstance(outcome, dict):
        return outcome
    if send.blocking:
        # Same stopping point as a stream: terminal, or waiting for the client.
        waiter = Subscription([], outcome)
        try:
            while not waiter.finished:
                await waiter.next()
        finally:
            waiter.close()
    return ctx.engine.snapshot(outcome, send.history_length)


async def _get(ctx: Context, raw: Any) -> Any:
    query = params.task_query(raw)
    return ctx.engine.snapshot(ctx.engine.get(query.task_id), query.history_length)


async def _cancel(ctx: Context, raw: Any) -> Any:
    record = ctx.engine.get(params.task_id(raw))
    ctx.engine.cancel(record)
    return ctx.engine.snapshot(record)


async def _push_set(ctx: Context, raw: Any) -> Any:
    request = params.push_config_set(raw)
    record = ctx.engine.get(request.task_id)
    config = ctx.engine.add_push_config(record, request.config)
    return {"taskId": record.id, "pushNotificationConfig": config}


async def _push_get(ctx: Context, raw: Any) -> Any:
    ref = params.push_config_ref(raw)
    record = ctx.engine.get(ref.task_id)
    config = record.push_configs.get(ref.config_id)
    if config is None:
        # py@v0.3.26 answers -32603 here; a missing id is the caller's mistake, hence -32602.
        raise invalid_params(f"no push notification config {ref.config_id!r} for task {record.id}")
    return {"taskId": record.id, "pushNotificationConfig": config}


async def _push_list(ctx: Context, raw: Any) -> Any:
    record = ctx.engine.get(params.task_id(raw))
    return [
        {"taskId": record.id, "pushNotificationConfig": c} for c in record.push_configs.values()
    ]


async def _push_delete(ctx: Context, raw: Any) -> Any:
    ref = params.push_config_ref(raw)
    record = ctx.engine.get(ref.task_id)
    # Deleting what is not there succeeds, as in py@v0.3.26: the end state is the same.
    record.push_configs.pop(ref.config_id, None)
    return None


async def _extended_card(ctx: Context, raw: Any) -> Any:
    return extended_card(ctx.base_url)


UNARY: dict[str, Unary] = {
    "message/send": _send,
    "tasks/get": _get,
    "tasks/cancel": _cancel,
    "tasks/pushNotificationConfig/set": _push_set,
    "tasks/pushNotificationConfig/get": _push_get,
    "tasks/pushNotificationConfig/list": _push_list,
    "tasks/pushNotificationConfig/delete": _push_delete,
    "agent/getAuthenticatedExtendedCard": _extended_card,
}


# --- streaming methods ---------------------------------------------------------


def _stream(ctx: Context, raw: Any) -> Subscription:
    send = params.send_params(raw)
    outcome = accept(ctx.engine, send, ctx.timing)
    if isinstance(outcome, dict):
        return Subscription([outcome])
    return Subscription([ctx.engine.snapshot(outcome, send.history_length)], outcome)


def _resubscribe(ctx: Context, raw: Any) -> Subscription:
    record = ctx.engine.get(params.task_id(raw))
    snapshot = ctx.engine.snapshot(record)
    if record.state in TERMINAL_STATES:
        return Subscription([snapshot])
    return Subscription([snapshot], record)


STREAMING: dict[str, Streaming] = {
    "message/stream": _stream,
    "tasks/resubscribe": _resubscribe,
}


# --- HTTP ----------------------------------------------------------------------


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


def _base_url(request: web.Request) -> str:
    try:
        return f"{request.url.origin()}/"
    except ValueError:  # a Host header yarl cannot parse
        return "/"


def _context(request: web.Request) -> Context:
    app = request.app
    return Context(app[ENGINE_KEY], app[TIMING_KEY], _base_url(request))


def _frame(body: JSON) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def _open_sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.content_type = "text/event-stream"
    await response.prepare(request)
    return response


async def _serve_stream(
    request: web.Request, request_id: Any, events: Subscription
) -> web.StreamResponse:
    try:
        response = await _open_sse(request)
        try:
            while not events.finished:
                event = await events.next(KEEPALIVE_SECONDS)
                if event is not None:
                    await response.write(_frame(success(request_id, event)))
                elif not events.finished:
                    await response.write(b": keep-alive\n\n")
            await response.write_eof()
        except ConnectionResetError:
            logger.info("stream client went away")
    finally:
        events.close()
    return response


async def _serve_stream_error(
    request: web.Request, request_id: Any, error: RpcError
) -> web.StreamResponse:
    response = await _open_sse(request)
    try:
        await response.write(_frame(failure(request_id, error)))
        await response.write_eof()
    except ConnectionResetError:
        logger.info("stream client went away")
    return response


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

    ctx = _context(request)
    if method in STREAMING:
        try:
            events = STREAMING[method](ctx, raw)
        except RpcError as error:
            # Like py@v0.3.26: malformed params get a plain JSON reply, while A2A
            # errors (unknown task, ...) arrive as an event the SSE client can read.
            if error.code == INVALID_PARAMS:
                return _reply(failure(request_id, error))
            return await _serve_stream_error(request, request_id, error)
        except Exception:
            logger.exception("demo agent failed on %s", method)
            internal = RpcError(INTERNAL_ERROR, "Internal error")
            return await _serve_stream_error(request, request_id, internal)
        return await _serve_stream(request, request_id, events)

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
    return web.json_response(public_card(_base_url(request)))


async def _push_lifecycle(app: web.Application) -> AsyncIterator[None]:
    await app[PUSH_KEY].start()
    yield
    await app[PUSH_KEY].stop()


async def _stop_work(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for in-flight requests, so ending
    # background work here lets blocked sends and open streams finish promptly.
    await app[ENGINE_KEY].shutdown()


def build_app(
    *, chunk_interval: float = 0.05, slow_seconds: float = 30.0, push_timeout: float = 5.0
) -> web.Application:
    """The demo agent as an aiohttp application; the keyword arguments exist for tests."""
    push = PushSender(push_timeout)
    app = web.Application()
    app[PUSH_KEY] = push
    app[ENGINE_KEY] = Engine(push)
    app[TIMING_KEY] = Timing(chunk_interval=chunk_interval, slow_seconds=slow_seconds)
    app.router.add_post("/", handle_rpc)
    app.router.add_get("/.well-known/agent-card.json", handle_card)
    # The v0.2 name, still served by py@v0.3.26 for older clients.
    app.router.add_get("/.well-known/agent.json", handle_card)
    app.cleanup_ctx.append(_push_lifecycle)
    app.on_shutdown.append(_stop_work)
    return app
