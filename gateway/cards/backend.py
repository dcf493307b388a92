"""A backend's card: fetched lazily, kept fresh on a TTL with ETag revalidation.

A backend's card tells the gateway what to call (discovery), what it may refuse before
calling (capabilities, required extensions), and what to advertise. The last good copy
survives a failed refresh, so a flapping card endpoint never breaks calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from urllib.parse import urlsplit

import aiohttp
import structlog

from gateway.config.models import BackendConfig
from gateway.observability.metrics import CARD_REFRESHES, card_hit
from translators.card_serving import ParsedCard, parse_any_card
from translators.json_text import parse_json

log = structlog.get_logger("a2a_gateway.cards")

WELL_KNOWN = "/.well-known/agent-card.json"
# A card is a small document: a backend that sends more is not sending a card.
MAX_CARD_BYTES = 1024 * 1024


def default_card_url(config: BackendConfig) -> str | None:
    if config.card:
        return config.card
    if config.url and config.url.startswith(("http://", "https://")):
        parts = urlsplit(config.url)
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}"
    return None


def _http_date(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


class BackendCard:
    """One backend's card. ``version`` counts the changes of its content and ``modified``
    says when it last changed (the backend's Last-Modified, else when it was read), so
    what the gateway serves from it can be cached and revalidated."""

    def __init__(self, url: str | None, ttl: float, session: aiohttp.ClientSession,
                 tenant: str = "") -> None:
        self.url = url
        self.tenant = tenant
        self.ttl = ttl
        self._session = session
        self._parsed: ParsedCard | None = None
        self._etag: str | None = None
        # When the card was last read (or last failed: the next try waits a little).
        self._fetched_at = -math.inf
        self._lock = asyncio.Lock()
        self.last_error: str | None = None
        self.version = 0
        self.modified = time.time()

    async def get(self) -> ParsedCard | None:
        if self.url is None:
            return None
        if time.monotonic() - self._fetched_at < self.ttl:
            # Fresh, or a failed read retried only after its pause: a backend without a
            # card is not asked for one on every call.
            if self._parsed is not None:
                card_hit(self.tenant)
            return self._parsed
        async with self._lock:
            if time.monotonic() - self._fetched_at >= self.ttl:
                await self._refresh()
        return self._parsed

    async def _refresh(self) -> None:
        assert self.url is not None
        headers = {"Accept": "application/json"}
        if self._etag and self._parsed is not None:
            headers["If-None-Match"] = self._etag
        try:
            timeout = aiohttp.ClientTimeout(total=10)
            async with self._session.get(self.url, headers=headers, timeout=timeout,
                                         allow_redirects=False) as resp:
                if resp.status == 304 and self._parsed is not None:
                    self._fetched_at = time.monotonic()
                    return
                if resp.status != 200:
                    raise ValueError(f"HTTP {resp.status}")
                raw = await resp.content.read(MAX_CARD_BYTES + 1)
                if len(raw) > MAX_CARD_BYTES:
                    raise ValueError(f"larger than {MAX_CARD_BYTES} bytes")
                parsed = parse_any_card(parse_json(raw, what="the card").value)
                etag, modified = resp.headers.get("ETag"), _http_date(
                    resp.headers.get("Last-Modified"))
        except Exception as exc:  # keep the last good card; retry after a short pause
            error = f"{type(exc).__name__}: {exc}"
            if error != self.last_error:  # say it once, not on every retry
                log.warning("backend card unavailable", tenant=self.tenant, url=self.url,
                            error=error)
            self.last_error = error
            self._fetched_at = time.monotonic() - self.ttl + min(self.ttl, 5.0)
            CARD_REFRESHES.labels(self.tenant, "error").inc()
            return
        if self._parsed is None or parsed != self._parsed:
            self.version += 1
            self.modified = modified or time.time()
            if parsed.held:
                log.info("backend card holds fields only its v0.3 shape can carry",
                         tenant=self.tenant, fields=sorted(parsed.held))
        self._parsed, self._etag = parsed, etag
        self._fetched_at = time.monotonic()
        CARD_REFRESHES.labels(self.tenant, "ok").inc()
        self.last_error = None
