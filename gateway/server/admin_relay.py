"""The push relay's dead letters on the admin endpoints (docs/push-relay.md, "Dead
letters"): the operations of `a2a-gateway relay`, per tenant, as JSON, by the same code
(gateway/relay/dead_letters.py):

- ``GET /_admin/relay/dead-letters?tenant=T[&limit=N]`` the tenant's, newest first;
- ``GET /_admin/relay/dead-letters/{webhook_id}?tenant=T`` one, with its body;
- ``POST /_admin/relay/dead-letters/{webhook_id}/replay?tenant=T`` queue it again;
- ``DELETE /_admin/relay/dead-letters/{webhook_id}?tenant=T`` forget it.

Served where /readyz and /metrics are, under their rule (admin.py): open on the admin
listener, a gateway-wide credential on the main one. A missing tenant or a bad limit is
400, an unknown id 404, a store that cannot answer 503 with Retry-After; a replay a
browser sends for a page of another site 403 (admin_answers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from gateway.ingress.common import gateway_of
from gateway.relay import dead_letters
from gateway.server.admin_answers import error, refused_from_elsewhere
from gateway.state.base import STORE_RETRY_AFTER, StoreError

Refusal = Callable[[web.Request], Awaitable[web.Response | None]]
PREFIX = "/_admin/relay/dead-letters"
_MAX_LIMIT = 1000


def add_dead_letter_routes(app: web.Application, refusal: Refusal) -> None:
    async def handle(request: web.Request) -> web.Response:
        refused = refused_from_elsewhere(request, "a replay") or await refusal(request)
        if refused is not None:
            return refused
        tenant = request.query.get("tenant", "")
        if not tenant:
            return error(400, "the tenant is missing: ?tenant=<name>")
        relay = gateway_of(request).relay
        queue, sealer = relay.queue_store(), relay.sealer
        wid = request.match_info.get("webhook_id", "")
        try:
            if not wid:
                try:
                    limit = int(request.query.get("limit", "100"))
                except ValueError:
                    limit = 0
                if not 0 < limit <= _MAX_LIMIT:
                    return error(400, f"limit must be a whole number from 1 to {_MAX_LIMIT}")
                return web.json_response({"tenant": tenant, "dead_letters": await
                                          dead_letters.listing(queue, sealer, tenant, limit)})
            if request.method == "GET":
                shown = await dead_letters.show(queue, sealer, tenant, wid)
                if shown is None:
                    return error(404, dead_letters.missing(tenant, wid))
                return web.json_response(shown)
            action: dead_letters.Action = "drop" if request.method == "DELETE" else "replay"
            if not await dead_letters.act(queue, action, tenant, wid):
                return error(404, dead_letters.missing(tenant, wid))
            return web.json_response({"tenant": tenant, "webhook_id": wid,
                                      "outcome": "queued again" if action == "replay"
                                      else "dropped"})
        except StoreError as exc:
            return error(503, f"state store unavailable: {exc}",
                         **{"Retry-After": str(STORE_RETRY_AFTER)})

    app.router.add_get(PREFIX, handle)
    app.router.add_get(PREFIX + "/{webhook_id}", handle)
    app.router.add_delete(PREFIX + "/{webhook_id}", handle)
    app.router.add_post(PREFIX + "/{webhook_id}/replay", handle)
