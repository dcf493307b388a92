"""The admin endpoints: /healthz (always open: probes), /readyz, /metrics and the push
relay's dead letters (admin_relay.py).

They are served on the main listener unless `listen.admin` names a listener of their own
(plain HTTP, for the cluster's network only); there, nothing else is served. On the main
listener, once anyone is authenticated, /readyz and /metrics need a gateway-wide
credential bound to no tenant: they say which tenants exist and how busy they are.
"""

from __future__ import annotations

from aiohttp import web

from gateway.auth.peer import http_peer_cert
from gateway.ingress.common import GATEWAY_KEY, gateway_of, refused
from gateway.observability.metrics import exposition
from gateway.pipeline.holder import GatewayHolder
from gateway.server.admin_migration import add_migration_routes
from gateway.server.admin_relay import add_dead_letter_routes
from gateway.server.lifecycle import readiness
from translators.dialects.rest import REST_V10
from translators.errors import A2AError

# Marks the admin listener's app: its endpoints need no credential.
ADMIN_LISTENER = web.AppKey("admin_listener", bool)


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _refusal(request: web.Request) -> web.Response | None:
    """None when the caller may read an admin endpoint here, else the 401 / 403 answer
    (the rule: GatewayAuth.admit_admin)."""
    if request.app.get(ADMIN_LISTENER):
        return None
    policy = gateway_of(request).auth
    if policy is None:
        return None
    try:
        await policy.admit_admin(request.headers, http_peer_cert(request.transport))
    except A2AError as err:
        # Answered as the v1.0 HTTP+JSON binding answers (google.rpc.Status), with the
        # challenge: the one error shape, from its table.
        return refused(REST_V10.client(None).refusal(err), err, None)
    return None


async def readyz(request: web.Request) -> web.Response:
    refused = await _refusal(request)
    if refused is not None:
        return refused
    gateway = gateway_of(request)
    report = await readiness(gateway.tenants, gateway.config.readiness_timeout,
                             gateway.store)
    return web.json_response(report, status=503 if report["status"] == "not ready" else 200)


async def metrics(request: web.Request) -> web.Response:
    refused = await _refusal(request)
    if refused is not None:
        return refused
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


def add_admin_routes(app: web.Application, *, probes_only: bool) -> None:
    app.router.add_get("/healthz", healthz)
    if not probes_only:
        app.router.add_get("/readyz", readyz)
        app.router.add_get("/metrics", metrics)
        add_dead_letter_routes(app, _refusal)
        add_migration_routes(app, _refusal)


def build_admin_app(holder: GatewayHolder) -> web.Application:
    """The admin listener's app (``holder``: the server's GatewayHolder)."""
    app = web.Application()
    app[GATEWAY_KEY] = holder
    app[ADMIN_LISTENER] = True
    add_admin_routes(app, probes_only=False)
    return app
