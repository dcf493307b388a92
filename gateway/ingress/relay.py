"""`POST /_relay/{sealed}`: where backends post push notifications for relayed configs.

Checked in order: the seal (ours, not expired, not spent), the relay token the backend
was given, the body (bounded, JSON, an A2A event of the backend's version), the task (the
one the seal is bound to). Then the notification is translated for the client and stored
in the relay queue (gateway/state/relay_queue.py) — the same one posted again is taken
once — and only then is the backend answered 202; the relay worker delivers it
(gateway/relay/worker.py). A store that cannot take it gets the backend a 503 with
Retry-After (as does a tenant's full queue): not stored, not acknowledged. A
notification that ends its task spends the seal `spent_after` seconds later.
"""

from __future__ import annotations

import hashlib

import structlog
from a2a.types import a2a_pb2 as pb
from aiohttp import web

from gateway.ingress.common import gateway_of, read_body, refused
from gateway.relay import trace_context
from gateway.relay.delivery import log_fields
from gateway.relay.hooks import PushRelay
from gateway.relay.seals import SealError, seal_id
from gateway.state.base import STORE_RETRY_AFTER, StoreError, store_unavailable
from gateway.state.relay_queue import NewDelivery
from translators.dialects.contract import HttpAnswer
from translators.dialects.jsonrpc import TRANSPORT_ERRORS
from translators.errors import A2AError, a2a_error
from translators.json_text import dump_bytes, dumps, number_refusal, parse_json
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
    # The ingresses' one rendering of a refusal: with Retry-After when the error says
    # when to come back (store down, queue full), which an agent retries then.
    status, body = error_to_rest_v10(err)
    return refused(HttpAnswer(status, dump_bytes(body)), err, None)


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
        if len(raw_bytes) > relay.settings.queue.max_body:
            raise a2a_error("PayloadTooLargeError", "push relay: the notification is over "
                            f"push_relay.queue.max_body ({relay.settings.queue.max_body} "
                            "bytes)")
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
    try:
        body = body_for_client(event, raw, target.backend_version, target.client_version, loss)
        if body is None and not task_id and target.client_version == V03:
            raise a2a_error("UnsupportedOperationError", "a message outside any task has no "
                            "v0.3 webhook form (v0.3 webhooks carry a Task)")
    except A2AError as err:  # answered 202: the backend did its part; we log and count
        relay.counters.bump("failed")
        log.warning("push relay delivery failed", error=f"undeliverable: {err.message}",
                    **log_fields(target, task_id, 0, list(loss.dropped)))
        return await _taken(request, relay, target, sid, event)
    # The same notification posted again has the same id: the queue takes it once.
    webhook_id = "msg_" + hashlib.sha256(f"{sid}:".encode() + raw_bytes).hexdigest()[:32]
    item = NewDelivery(
        tenant=target.tenant, lane=f"{sid}:{task_id}", webhook_id=webhook_id, sealed=sealed,
        task_id=task_id, body=None if body is None else dump_bytes(body),
        event=event.SerializeToString(), dropped=dumps(list(loss.dropped)),
        trace=dumps(trace_context.inbound(request.headers)))
    try:
        queued = await relay.enqueue(item)
    except StoreError as exc:
        # Not stored, so not taken: the agent is told to try again (it SHOULD retry).
        return _refusal(store_unavailable("the push relay cannot queue the notification",
                                          exc))
    if queued == "full":
        log.warning("push relay queue full: notification refused", tenant=target.tenant,
                    task_id=task_id, limit=relay.settings.queue.max_per_tenant)
        return _refusal(a2a_error("StoreUnavailableError", "push relay: this tenant's "
                                  "delivery queue is full; retry later",
                                  retry_after=STORE_RETRY_AFTER))
    if queued == "duplicate":
        relay.counters.bump("duplicate")
        log.info("push relay dropped a repeated notification", tenant=target.tenant,
                 task_id=task_id)
        return web.json_response({}, status=202)
    relay.counters.bump("coalesced" if queued == "coalesced" else "accepted")
    return await _taken(request, relay, target, sid, event)


async def _taken(request: web.Request, relay: PushRelay, target: RelayTarget, sid: str,
                 event: pb.StreamResponse) -> web.Response:
    """A notification taken (queued, or undeliverable): the task index sees it, and one
    that ends its task spends the seal."""
    gateway = gateway_of(request)
    route = gateway.tenants.get(target.tenant)
    gateway.tasks.relayed(target.tenant, route.label if route is not None else "", event)
    if ends_task(event):
        await relay.state.spend(sid, relay.settings.spent_after,
                                relay.settings.seal_max_age or _SPENT_MEMORY)
    return web.json_response({}, status=202)
