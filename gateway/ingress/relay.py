"""`POST /_relay/{sealed}`: where backends post push notifications for relayed configs.

Checked in order: the seal (ours, not expired, not spent), the relay token the backend
was given, the body (bounded, JSON, an A2A event of the backend's version), the task (the
one the seal is bound to), and whether this very notification was taken before. Then the
backend gets 202 and the delivery runs in the background (delivery.py). A notification
that ends its task spends the seal `spent_after` seconds later.
"""

from __future__ import annotations

import hashlib

import structlog
from aiohttp import web

from gateway.ingress.common import gateway_of, read_body
from gateway.relay import trace_context
from gateway.relay.hooks import PushRelay
from gateway.relay.seals import SealError, seal_id
from translators.dialects.jsonrpc import TRANSPORT_ERRORS
from translators.errors import A2AError, a2a_error
from translators.json_text import dumps, number_refusal, parse_json
from translators.loss import LossReport
from translators.rest_errors import error_to_rest_v10
from translators.versions import V03
from translators.vocabulary import ends_task
from translators.webhooks import (
    RelayTarget,
    backend_token_matches,
    body_for_client,
    event_task_id,
    parse_backend_body,
)

log = structlog.get_logger("a2a_gateway.push_relay")

# How long a spent seal is remembered when seals have no age limit of their own.
_SPENT_MEMORY = 7 * 24 * 3600.0


def _refusal(err: A2AError) -> web.Response:
    status, body = error_to_rest_v10(err)
    return web.Response(text=dumps(body), status=status, content_type="application/json")


def _refused(relay: PushRelay, why: str, **fields: str) -> web.Response:
    relay.counters.bump("refused")
    log.warning("push relay refused a notification", reason=why, **fields)
    return _refusal(a2a_error("PermissionDeniedError", f"push relay: {why}"))


async def _open(relay: PushRelay, sealed: str) -> RelayTarget | web.Response:
    try:
        target = relay.sealer.open(sealed, check_age=True)
    except SealError as exc:
        return _refused(relay, str(exc))
    if await relay.state.spent(seal_id(sealed)):
        return _refused(relay, "the task this relay URL was registered for has ended",
                        tenant=target.tenant)
    return target


async def handle(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    relay = gateway.relay
    if not relay.enabled:
        return _refusal(a2a_error("MethodNotFoundError", "the push relay is disabled"))
    sealed = request.match_info["sealed"]
    opened = await _open(relay, sealed)
    if isinstance(opened, web.Response):
        return opened
    target = opened
    if not backend_token_matches(request.headers, target.relay_token):
        return _refused(relay, "the notification does not carry the token registered with "
                        "this relay URL", tenant=target.tenant)
    loss = LossReport()
    try:
        raw_bytes = await read_body(request, gateway)
        parsed = parse_json(raw_bytes)
        if parsed.bad_number is not None:
            raise number_refusal(parsed.bad_number, "InvalidRequestError")
        raw = parsed.value
        event = parse_backend_body(raw, target.backend_version, loss)
    except A2AError as err:
        if err.kind.name in TRANSPORT_ERRORS:
            return _refusal(err)
        return _refusal(a2a_error("InvalidRequestError", f"push relay: {err.message}"))
    task_id = event_task_id(event)
    sid = seal_id(sealed)
    if task_id and ((target.task_id and task_id != target.task_id)
                    or (not target.task_id and not await relay.state.bind(sid, task_id))):
        return _refused(relay, "the notification is for another task than the one this "
                        "relay URL was registered for", tenant=target.tenant)
    digest = hashlib.sha256(raw_bytes).hexdigest()
    if not await relay.state.first_time(f"{sid}:{digest}", relay.settings.replay_window):
        relay.counters.bump("duplicate")
        log.info("push relay dropped a repeated notification", tenant=target.tenant,
                 task_id=task_id)
        return web.json_response({}, status=202)
    relay.counters.bump("accepted")
    route = gateway.tenants.get(target.tenant)
    gateway.tasks.relayed(target.tenant, route.label if route is not None else "", event)
    if ends_task(event):
        await relay.state.spend(sid, relay.settings.spent_after,
                                relay.settings.seal_max_age or _SPENT_MEMORY)
    try:
        body = body_for_client(event, raw, target.backend_version, target.client_version, loss)
    except A2AError as err:  # answered 202: the backend did its part; we log and count
        relay.delivery.report_failure(target, task_id, 0, f"untranslatable body: {err.message}",
                                      loss)
        return web.json_response({}, status=202)
    if body is None and not task_id and target.client_version == V03:
        relay.delivery.report_failure(target, task_id, 0, "a message outside any task has "
                                      "no v0.3 webhook form (v0.3 webhooks carry a Task)", loss)
        return web.json_response({}, status=202)
    trace_context.relay_inbound(request.headers)  # the deliveries' parent trace, if any
    relay.delivery.submit(sealed, target, event, body, loss)
    return web.json_response({}, status=202)
