"""What the admin endpoints that act (gateway/server/admin_migration.py, admin_relay.py)
answer alike: an error as `{"error": …}`, and the refusal of an act a browser sends for a
page of another site.

Why the refusal: the admin listener asks for no credential, and a browser posts a form
to any address without asking first (no CORS preflight for a "simple" POST), so a page
of any site could move a canary's share or replay a dead letter on the operator's
machine. Browsers say where such a request comes from (`Sec-Fetch-Site`, `Origin`);
curl, scripts and the gateway's own CLI send neither and are not affected. A site that
points its own name at the listener (DNS rebinding) passes this check: the admin
listener belongs on an address untrusted pages cannot reach (docs/security.md)."""

from __future__ import annotations

from aiohttp import web

_SAME_SITE = ("same-origin", "none")  # Sec-Fetch-Site of a page of its own, a typed URL


def error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


def cross_site(request: web.Request) -> bool:
    """A browser's request for a page of another site."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site.strip().lower() not in _SAME_SITE:
        return True
    origin = request.headers.get("Origin")
    # Browsers leave the default port out of Origin and Host alike; "null" (a sandboxed
    # page, a redirect) matches nothing.
    return origin is not None and \
        origin.strip().lower() != f"{request.scheme}://{request.host}".lower()


def refused_from_elsewhere(request: web.Request, act: str) -> web.Response | None:
    """403 for a POST (``act``: what it does) a browser sends for another site's page."""
    if request.method != "POST" or not cross_site(request):
        return None
    return error(403, f"{act} is refused from a page of another site (Origin, "
                 "Sec-Fetch-Site): use the CLI or the API")
