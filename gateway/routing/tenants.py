"""A tenant's route to its backend: the backend client, and the backend's card.

A backend configured by `url` is built at once; one configured by `card` only is
discovered: the card is fetched, an interface picked by the tenant's preference, and
the client built for it (and rebuilt if a refreshed card points elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable

import aiohttp
import structlog
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.cards.backend import BackendCard, default_card_url
from gateway.config.models import BackendConfig
from gateway.egress.base import Backend, EventBatches, backend_unavailable
from gateway.routing.fallback import FallbackBackend
from translators.card_serving import pick_interface
from translators.dialects.base import WireAnswer
from translators.dialects.contract import Dialect
from translators.errors import A2AError
from translators.vocabulary import JSON

log = structlog.get_logger("a2a_gateway.tenants")

BackendFactory = Callable[[BackendConfig], Backend]


class TenantRoute:
    def __init__(self, name: str, config: BackendConfig, session: aiohttp.ClientSession,
                 make_backend: BackendFactory) -> None:
        self.name = name
        self.config = config
        self.card = BackendCard(default_card_url(config), config.card_ttl, session, name)
        self._make = make_backend
        self._backend: Backend | None = self._build(config) if config.url else None
        self._picked: JSON | None = None
        self._retired: list[Backend] = []

    def _build(self, config: BackendConfig) -> Backend:
        """The backend client for ``config``; with `fallback`, one that uses the card's
        other interfaces for what this one cannot do (fallback.py)."""
        backend = self._make(config)
        if self.config.fallback and self.card.url:
            return FallbackBackend(backend, self.name, self.card, self._make)
        return backend

    @property
    def discovered(self) -> bool:
        return self.config.url is None

    @property
    def fixed_backend(self) -> Backend | None:
        """The backend of a tenant configured with its `url` (known without waiting);
        None for one discovered from its card (:meth:`backend` resolves it)."""
        return None if self.config.url is None else self._backend

    @property
    def label(self) -> str:
        """The backend's binding and version as last resolved (never its address)."""
        b = self._backend
        return "" if b is None else f"{b.config.binding}/{b.config.version}"

    async def backend(self, call: Call) -> Backend:
        if not self.discovered:
            assert self._backend is not None
            return self._backend
        parsed = await self.card.get()
        if parsed is None:
            if self._backend is not None:
                return self._backend  # the card is gone for now; keep what worked
            raise backend_unavailable(call, self.config, f"its card {self.card.url} could "
                                      f"not be fetched ({self.card.last_error})")
        d = self.config.discovery
        picked = pick_interface(parsed.p10, prefer_version=d.prefer_version,
                                bindings=tuple(d.bindings))
        if picked is None:
            raise backend_unavailable(call, self.config, "its card lists no interface this "
                                      f"gateway can call with bindings {d.bindings}")
        if self._backend is None or picked != self._picked:
            effective = self.config.model_copy(update={
                "url": picked["url"], "version": picked["protocolVersion"],
                "binding": picked["protocolBinding"],
                "tenant": picked.get("tenant") or self.config.tenant})
            if self._backend is not None:
                self._retired.append(self._backend)
            self._backend = self._build(BackendConfig.model_validate(effective.model_dump()))
            self._picked = picked
            log.info("backend discovered", tenant=self.name, url=picked["url"],
                     version=picked["protocolVersion"], binding=picked["protocolBinding"])
        return self._backend

    async def card_json(self) -> JSON | None:
        parsed = await self.card.get() if self.card.url else None
        return parsed.p10 if parsed is not None else None

    async def close(self) -> None:
        for backend in [*self._retired, *([self._backend] if self._backend else [])]:
            await backend.close()


class Unreachable:
    """A backend that could not be resolved (its card unread): every call to it fails
    with the error its resolution did. Put in its place where a later stage may send the
    call elsewhere (a migration's candidate), so that the agent the call does not go to
    fails no call."""

    def __init__(self, config: BackendConfig, error: A2AError) -> None:
        self.config = config
        self.error = error

    @property
    def dialect(self) -> Dialect:
        raise self.error

    async def unary(self, call: Call) -> ProtoMessage | None:
        raise self.error

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        raise self.error

    async def stream(self, call: Call) -> EventBatches:
        raise self.error
        yield  # an async generator, as every backend's stream is

    async def close(self) -> None:
        return None
