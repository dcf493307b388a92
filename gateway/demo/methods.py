"""What each v0.3 JSON-RPC method of the demo agent does, on J03 values (params in,
result or events out), whatever carries them: `server` serves these on the v0.3 wire,
`v10` behind its translation to and from the v1.0 wire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.demo import params
from gateway.demo.card import extended_card
from gateway.demo.engine import Engine, Subscription
from gateway.demo.push import PushSender
from gateway.demo.skills import Timing, accept
from gateway.demo.wire import TERMINAL_STATES, invalid_params


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


def base_url(request: web.Request) -> str:
    try:
        return f"{request.url.origin()}/"
    except ValueError:  # a Host header yarl cannot parse
        return "/"


def context(request: web.Request) -> Context:
    app = request.app
    return Context(app[ENGINE_KEY], app[TIMING_KEY], base_url(request))
