"""What a REST request may be answered with (README "HTTP+JSON"), decided independently
of the gateway's router: the route table is data (translators/rest_routes.py), the
matching rules are the README's.

- A path that names a route under the README's rules: an answer of that route's version
  (a success of its result type, or an error of its dialect).
- A path some route has under another verb: 405 with Allow. No route at all: 404.
- `/v1/...` and `/{tenant}/v1/...` speak v0.3 unless A2A-Version is 1.x; other paths v1.0.
- `POST /` and `POST /{tenant}` are JSON-RPC.
- A body over `max_body_bytes` may be refused 413 before the path is looked at (the body
  is read, bounded, first), whatever the route or verb.
- Paths are read both ways a server may read them: decoded per segment (`%2F` inside an
  id) and decoded whole; with and without dot segments and doubled slashes. Any reading's
  answer is accepted.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from tests.fuzz.fuzz_checks_http import RestExpect, RpcExpect
from tests.fuzz.fuzz_documents import V03, V10
from tests.fuzz.fuzz_http import (
    SERVED,
    declared_version,
    declares_1x,
    fallback_dialects,
    over_limit,
    version_status,
)
from tests.fuzz.fuzz_run import HttpRequest
from translators.rest_routes import V03_ROUTES, V10_ROUTES, Route

ROUTES: tuple[Route, ...] = (*V10_ROUTES, *V03_ROUTES)
_SEGMENT = "\x00SEG\x00"  # a `/` that was `%2F` (kept inside its segment)


def _pattern(template: str) -> re.Pattern[str]:
    regex = re.sub(r"\\\{(\w+)\\\}", "[^/:]+", re.escape(template))
    return re.compile(regex + "/?", re.S)


PATTERNS = {route: _pattern(route.template) for route in ROUTES}
_TENANT = re.compile(r"/([^/:]+)(/.*)", re.S)
OTHER_HANDLERS = re.compile(r"^(/[^/]+)?/\.well-known/|^/(healthz|readyz|metrics)$|^/_relay/")


@dataclass(frozen=True)
class Reading:
    """One way to read the request's path."""

    path: str
    routes: tuple[tuple[Route, str | None], ...]  # routes (any verb) and their tenants


def _candidates(path: str, declared: str | None) -> list[tuple[tuple[Route, ...], str, str | None]]:
    """(route set, rest of path, tenant) in the order the README prefers them."""
    prefixed = _TENANT.fullmatch(path)
    tenant_tries = [] if prefixed is None else [(V03_ROUTES, prefixed[2], prefixed[1]),
                                                 (V10_ROUTES, prefixed[2], prefixed[1])]
    direct = [(V03_ROUTES, path, None), (V10_ROUTES, path, None)]
    if declares_1x(declared):
        return [direct[1], *tenant_tries[1:]]  # 1.x reads v1.0 paths only
    if path.startswith("/v1/"):
        return [direct[0], *tenant_tries[:1]]  # without 1.x, `v1` is never a tenant
    return [*direct, *tenant_tries]


def _read(path: str, declared: str | None) -> Reading:
    found: list[tuple[Route, str | None]] = []
    for routes, rest, tenant in _candidates(path, declared):
        rest = rest.replace(_SEGMENT, "%2F")
        found += [(r, tenant) for r in routes if PATTERNS[r].fullmatch(rest)]
    return Reading(path, tuple(found))


def _normalized(path: str) -> str:
    merged = re.sub(r"/{2,}", "/", path)
    out = posixpath.normpath(merged) if merged not in ("", "/") else "/"
    return out + ("/" if merged.endswith("/") and out != "/" else "")


def readings(raw_path: str, declared: str | None) -> list[Reading]:
    per_segment = "/".join(unquote(s).replace("/", _SEGMENT) for s in raw_path.split("/"))
    whole = unquote(raw_path)
    paths = {raw_path, per_segment, whole, _normalized(per_segment), _normalized(whole)}
    return [_read(p, declared) for p in sorted(paths)]


def path_dialect(path: str, declared: str | None) -> str:
    """The version an unmatched path speaks (README: `/v1/...` is v0.3 unless 1.x)."""
    if declares_1x(declared):
        return V10
    return V03 if re.match(r"(/[^/:]+)?/v1/", path) else V10


def _jsonrpc_path(path: str) -> bool:
    return re.fullmatch(r"/([^/:]+/?)?", path) is not None


def rest_expect(req: HttpRequest, rpc: RpcExpect) -> RestExpect | None:
    """The expectation, or None for paths other handlers serve (cards, probes, relay)."""
    raw_path = req.target.partition("?")[0]
    declared, clear = declared_version(req.headers, req.target)
    status = version_status(declared) if clear else "ambiguous"
    dialects: set[str] = set()
    statuses: set[int] = set()
    intents: set[tuple[str, str]] = set()
    jsonrpc = False
    for reading in readings(raw_path, declared):
        if OTHER_HANDLERS.search(reading.path):
            return None
        matched = [(r, t) for r, t in reading.routes if r.verb == req.verb]
        if req.verb == "POST" and _jsonrpc_path(reading.path):
            jsonrpc = True
        elif matched:
            route, tenant = matched[0]
            intents.add((route.version, route.op))
            dialects.add(route.version)
            statuses.update(_route_statuses(route, tenant, req.body, status))
        else:
            dialects.add(path_dialect(reading.path, declared))
            statuses.update(_unmatched_statuses(req.verb, reading))
            if over_limit(req.body):
                statuses.add(413)
            if status not in SERVED:
                statuses.add(400)  # the header may be refused first
    if status not in SERVED:
        dialects.update(SERVED)
    return RestExpect(frozenset(dialects or fallback_dialects(req.headers, req.target)),
                      routes=frozenset(intents),
                      statuses=None if not statuses or ANY_STATUS in statuses
                      else frozenset(statuses), rpc=rpc if jsonrpc else None)


ANY_STATUS = 0
KNOWN_TENANTS = {None, "t03", "t10", "v1"}


def _route_statuses(route: Route, tenant: str | None, body: bytes, version: str) -> set[int]:
    """413 over the limit (body or not: it is read first), 400 for a version not served
    (either may be found first, and an unknown tenant's 404 too); else anything but a
    5xx."""
    out = {413} if over_limit(body) else set()
    if version == "unsupported":
        out.add(400)
    elif version == "ambiguous" or not out:
        return {ANY_STATUS}
    if tenant not in KNOWN_TENANTS:
        out.add(404)
    return out


def _unmatched_statuses(verb: str, reading: Reading) -> set[int]:
    if verb == "OPTIONS":
        return {405, 404, 200, 204}
    if reading.routes:
        allowed = {r.verb for r, _ in reading.routes}
        return {ANY_STATUS} if verb == "HEAD" and "GET" in allowed else {405}
    return {404}
