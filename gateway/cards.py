"""Backend cards (fetch, cache on a TTL with ETag revalidation) and the gateway's own card.

A backend's card tells the gateway what to call (discovery), what it may refuse before
calling (capabilities, required extensions), and what to advertise. The gateway never
advertises a backend's internal address: every served card lists the gateway's own
interfaces, with public URLs from `public_url` or the X-Forwarded-* headers.
"""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlsplit

import aiohttp
import structlog
from a2a.types import a2a_pb2 as pb
from aiohttp import web

from gateway.call import CallContext
from gateway.card_signing import CardSigner
from gateway.config import BackendConfig, GatewayConfig
from gateway.metrics import CARD_HITS, CARD_REFRESHES
from translators.card_serving import (
    ParsedCard,
    card_for_version,
    gateway_interfaces,
    parse_any_card,
    union_card,
    with_interfaces,
)
from translators.j03.common import JSON
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03, V10, normalize_version

log = structlog.get_logger("a2a_gateway.cards")

WELL_KNOWN = "/.well-known/agent-card.json"


def default_card_url(config: BackendConfig) -> str | None:
    if config.card:
        return config.card
    if config.url and config.url.startswith(("http://", "https://")):
        parts = urlsplit(config.url)
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}"
    return None


class BackendCard:
    """One backend's card, fetched lazily and kept fresh; the last good copy survives
    a failed refresh, so a flapping card endpoint never breaks calls."""

    def __init__(self, url: str | None, ttl: float, session: aiohttp.ClientSession,
                 tenant: str = "") -> None:
        self.url = url
        self.tenant = tenant
        self.ttl = ttl
        self._session = session
        self._parsed: ParsedCard | None = None
        self._etag: str | None = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()
        self.last_error: str | None = None

    @property
    def parsed(self) -> ParsedCard | None:
        return self._parsed

    async def get(self) -> ParsedCard | None:
        if self.url is None:
            return None
        if self._parsed is not None and time.monotonic() - self._fetched_at < self.ttl:
            CARD_HITS.labels(self.tenant).inc()
            return self._parsed
        async with self._lock:
            if self._parsed is None or time.monotonic() - self._fetched_at >= self.ttl:
                await self._refresh()
        return self._parsed

    async def _refresh(self) -> None:
        assert self.url is not None
        headers = {"Accept": "application/json"}
        if self._etag and self._parsed is not None:
            headers["If-None-Match"] = self._etag
        try:
            timeout = aiohttp.ClientTimeout(total=10)
            async with self._session.get(self.url, headers=headers, timeout=timeout) as resp:
                if resp.status == 304 and self._parsed is not None:
                    self._fetched_at = time.monotonic()
                    return
                if resp.status != 200:
                    raise ValueError(f"HTTP {resp.status}")
                parsed = parse_any_card(json.loads(await resp.read()))
                self._etag = resp.headers.get("ETag")
        except Exception as exc:  # keep the last good card; retry after a short pause
            error = f"{type(exc).__name__}: {exc}"
            if error != self.last_error:  # say it once, not on every retry
                log.warning("backend card unavailable", url=self.url, error=error)
            self.last_error = error
            self._fetched_at = time.monotonic() - self.ttl + min(self.ttl, 5.0)
            CARD_REFRESHES.labels(self.tenant, "error").inc()
            return
        self._parsed = parsed
        self._fetched_at = time.monotonic()
        CARD_REFRESHES.labels(self.tenant, "ok").inc()
        self.last_error = None


def public_base(request: web.Request, config: GatewayConfig) -> str:
    """The gateway's public HTTP base: X-Forwarded-* when a proxy says so, else
    `public_url`, else what the client used to reach us."""
    proto = request.headers.get("X-Forwarded-Proto")
    host = request.headers.get("X-Forwarded-Host")
    if proto or host:
        prefix = request.headers.get("X-Forwarded-Prefix", "").rstrip("/")
        return f"{proto or request.scheme}://{host or request.host}{prefix}"
    if config.public_url:
        return config.public_url.rstrip("/")
    return f"{request.scheme}://{request.host}"


def public_grpc(request: web.Request, config: GatewayConfig) -> str | None:
    if config.public_grpc:
        return config.public_grpc
    if not config.listen.grpc:
        return None
    port = config.listen.grpc.rpartition(":")[2]
    host = urlsplit(public_base(request, config)).hostname or "127.0.0.1"
    return f"{host}:{port}"


def minimal_card(tenant: str) -> JSON:
    """What the gateway serves for a backend whose card it does not know."""
    return {"name": tenant, "description": f"A2A agent '{tenant}' behind a2a-gateway",
            "version": "unknown", "capabilities": {}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


def served_card(backend: JSON | None, tenant: str, path_tenant: str | None, base: str,
                grpc: str | None, versions: tuple[str, ...]) -> JSON:
    interfaces = gateway_interfaces(base, grpc, path_tenant, versions)
    return with_interfaces(backend or minimal_card(tenant), interfaces)


def render_for(request: web.Request, card: JSON) -> tuple[JSON, dict[str, str]]:
    """The union card by default; one version's card when the client names it."""
    declared = request.headers.get("A2A-Version") or request.query.get("A2A-Version")
    headers = {"Vary": "A2A-Version", "Cache-Control": "max-age=60"}
    if declared:
        version = normalize_version(declared)
        if version in (V10, V03):
            return card_for_version(card, version), headers
    return union_card(card), headers


class CardPublisher:
    """The cards the gateway hands out: the public one per tenant, and extended cards
    coming back from backends, both re-pointed at the gateway and re-signed if set up."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.signer = CardSigner(config.card_signing) if config.card_signing else None

    def _finish(self, card: JSON, tenant: str, path_tenant: str | None, base: str,
                grpc: str | None) -> JSON:
        out = served_card(card, tenant, path_tenant, base, grpc, tuple(self.config.versions))
        return self.signer.sign(out) if self.signer else out

    def public(self, request: web.Request, backend: JSON | None, tenant: str,
               path_tenant: str | None) -> JSON:
        return self._finish(backend or minimal_card(tenant), tenant, path_tenant,
                            public_base(request, self.config), public_grpc(request, self.config))

    def rewrite_extended(self, card: pb.AgentCard, ctx: CallContext) -> pb.AgentCard:
        base = ctx.public_base or self.config.public_url or f"http://{self.config.listen.http}"
        grpc = self.config.public_grpc or self.config.listen.grpc
        tenant = ctx.tenant or ""
        path_tenant = tenant if tenant != self.config.default_tenant else None
        rewritten = self._finish(dump_p10(card), tenant, path_tenant, base, grpc)
        return parse_p10(rewritten, pb.AgentCard, error="InvalidAgentResponseError")
