"""Migration mode's report on the admin endpoints (docs/migration.md, "The report"): what
`a2a-gateway migration` shows, as JSON and as web pages, from the gateway's
``migration`` (gateway/migration/tenants.py, read as a
:class:`~gateway.migration.api.MigrationAdmin`):

- ``GET /_admin/migration`` the tenants in migration (their reports, without events and
  disagreements); ``GET /_admin/migration/page`` the same as a web page;
- ``GET /_admin/migration/{tenant}[?last=N]`` one tenant's report with its last N
  disagreements (1..200, default 20); ``GET /_admin/migration/{tenant}/page[?last=N]``
  the same as a web page, the disagreements side by side;
- ``POST /_admin/migration/{tenant}/promote`` and ``…/rollback`` move the candidate's
  share by hand; the answer is the new report.

Served where /readyz and /metrics are, under their rule (admin.py). Under /_admin/ as the
relay's dead letters are: the main listener routes ``/{tenant}/…`` to tenants, so a bare
``/migration/…`` would hide the calls of a tenant named "migration". A bad ``last`` is
400, a tenant without migration 404 (409 for a move of one whose mode is `off`), a store that cannot answer 503 with Retry-After.
A move a browser sends for a page of another site is 403 (admin_answers.py).
The pages quote answers of agents the operator does not control: they are escaped
(gateway/migration/render.py) and served under a Content-Security-Policy that allows
no script and nothing from elsewhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from gateway.ingress.common import gateway_of
from gateway.migration import render
from gateway.migration.api import LAST_DEFAULT, LAST_MAX, MOVES, MigrationAdmin
from gateway.server.admin_answers import error, refused_from_elsewhere
from gateway.state.base import STORE_RETRY_AFTER, StoreError

Refusal = Callable[[web.Request], Awaitable[web.Response | None]]
PREFIX = "/_admin/migration"
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
_NAME_SHOWN = 100  # characters of a tenant name from the path echoed in an error


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html", charset="utf-8",
                        headers=PAGE_HEADERS)


def _migration(request: web.Request) -> MigrationAdmin:
    migration: MigrationAdmin = gateway_of(request).migration  # gateway/migration/tenants.py
    return migration


def _last(request: web.Request) -> int | None:
    try:
        last = int(request.query.get("last", str(LAST_DEFAULT)))
    except ValueError:
        return None
    return last if 1 <= last <= LAST_MAX else None


def _missing(request: web.Request, tenant: str, action: str | None) -> web.Response:
    if action is not None and tenant in _migration(request).tenants():
        return error(409, f"tenant {tenant!r} has its migration off (mode off): nothing "
                     f"to {action}")
    if tenant in gateway_of(request).tenants:  # a configured name: safe to echo whole
        return error(404, f"tenant {tenant!r} has no migration block "
                     f"(tenants.{tenant}.migration in the config)")
    return error(404, f"no tenant {tenant[:_NAME_SHOWN]!r}")


async def _listing(migration: MigrationAdmin) -> dict[str, Any]:
    """GET /_admin/migration: each tenant's report but its events and disagreements."""
    listed = []
    for tenant in migration.tenants():
        report = await migration.report(tenant, last=1)
        if report is not None:
            listed.append({k: v for k, v in report.items()
                           if k not in ("events", "disagreements")})
    return {"tenants": listed}


def add_migration_routes(app: web.Application, refusal: Refusal) -> None:
    async def handle(request: web.Request) -> web.Response:
        refused = refused_from_elsewhere(request, "a move by hand") or await refusal(request)
        if refused is not None:
            return refused
        migration = _migration(request)
        tenant = request.match_info.get("tenant")
        action = request.match_info.get("action")
        as_page = request.path.endswith("/page")
        try:
            if tenant is None:
                listing = await _listing(migration)
                return _html(render.index_page(listing)) if as_page \
                    else web.json_response(listing)
            last = _last(request)
            if last is None:
                return error(400, f"last must be a whole number from 1 to {LAST_MAX} "
                             f"(the disagreements shown; default {LAST_DEFAULT})")
            if action is None:
                report = await migration.report(tenant, last=last)
            else:  # the route admits only the two moves
                report = await migration.move(tenant, "promote" if action == "promote"
                                              else "rollback", _by(request))
            if report is None:
                return _missing(request, tenant, action)
            return _html(render.page(report)) if as_page else web.json_response(report)
        except StoreError as exc:
            return error(503, f"state store unavailable: {exc}",
                         **{"Retry-After": str(STORE_RETRY_AFTER)})

    app.router.add_get(PREFIX, handle)
    # Before /{tenant}: …/page is the list's page (so a tenant named "page" has its page
    # at …/page/page and no JSON report here).
    app.router.add_get(PREFIX + "/page", handle)
    app.router.add_get(PREFIX + "/{tenant}", handle)
    app.router.add_get(PREFIX + "/{tenant}/page", handle)
    app.router.add_post(PREFIX + "/{tenant}/{action:" + "|".join(MOVES) + "}", handle)


def _by(request: web.Request) -> str:
    """Who moved the share, for the report's events: the admin API and the caller's
    address (the principal is checked by the refusal rule, not kept)."""
    return f"admin API ({request.remote or 'unknown address'})"
