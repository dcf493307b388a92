"""Serving the gateway's agent card: `/.well-known/agent-card.json` (and the v0.2 name
`agent.json`), per tenant under `/{tenant}/.well-known/agent-card.json`."""

from __future__ import annotations

import json
from dataclasses import replace

from aiohttp import web

from gateway.cards import render_for
from gateway.ingress.common import gateway_of
from translators.errors import A2AError
from translators.rest_errors import error_to_rest_v10


async def handle(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    path_tenant = request.match_info.get("tenant")
    try:
        route = gateway.tenant_for(path_tenant)
    except A2AError as err:
        # An unknown tenant has no card: 404, with the reason saying why.
        err.kind = replace(err.kind, http=404, grpc="NOT_FOUND")
        status, body = error_to_rest_v10(err)
        return web.json_response(body, status=status)
    card = gateway.cards.public(request, await route.card_json(), route.name, path_tenant)
    body, headers = render_for(request, card)
    return web.Response(text=json.dumps(body, ensure_ascii=False), headers=headers,
                        content_type="application/json")
