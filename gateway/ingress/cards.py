"""Serving the gateway's agent card: `/.well-known/agent-card.json` (and the v0.2 name
`agent.json`), per tenant under `/{tenant}/.well-known/agent-card.json`.

The shape follows the request's A2A-Version (header or query): `1.0` or `0.3`, else
`cards.default_shape`. Answers carry a strong ETag, Last-Modified, the configured
Cache-Control and a Vary naming every header the card depends on; a matching
If-None-Match (or, without one, an If-Modified-Since not older than the card) gets 304.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime

from aiohttp import web

from gateway.ingress.common import DROPPED_HEADER, gateway_of, header_version
from gateway.observability.observe import log_dropped
from translators.errors import A2AError
from translators.json_text import dumps
from translators.rest_errors import error_to_rest_v10
from translators.versions import V03, V10, normalize_version


def _not_modified(request: web.Request, etag: str, last_modified: str) -> bool:
    tags = request.headers.get("If-None-Match")
    if tags is not None:
        return tags.strip() == "*" or etag in [t.strip() for t in tags.split(",")]
    since = request.headers.get("If-Modified-Since")
    if since is None:
        return False
    try:
        return parsedate_to_datetime(last_modified) <= parsedate_to_datetime(since)
    except (TypeError, ValueError, IndexError):
        return False


async def handle(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    path_tenant = request.match_info.get("tenant")
    try:
        route = gateway.tenant_for(path_tenant)
    except A2AError as err:  # an unknown tenant has no card
        status, body = error_to_rest_v10(err)
        return web.Response(text=dumps(body), status=status, content_type="application/json")
    declared = header_version(request)
    shape = normalize_version(declared) if declared else gateway.config.cards.default_shape
    if shape not in (V10, V03):
        shape = gateway.config.cards.default_shape
    publisher = gateway.cards
    backend = await route.card.get()
    rendered = publisher.public(
        tenant=route.name, path_tenant=path_tenant,
        http_base=publisher.address.http_base(request), backend=backend,
        card_version=route.card.version, card_modified=route.card.modified, shape=shape)
    headers = {"ETag": rendered.etag, "Last-Modified": rendered.last_modified,
               "Cache-Control": gateway.config.cards.cache_control,
               "Vary": publisher.address.vary}
    if rendered.dropped:
        headers[DROPPED_HEADER] = ",".join(rendered.dropped)
        log_dropped("card", route.name, list(rendered.dropped))
    if _not_modified(request, rendered.etag, rendered.last_modified):
        return web.Response(status=304, headers=headers)
    return web.Response(body=rendered.body, headers=headers, content_type="application/json",
                        charset="utf-8")
