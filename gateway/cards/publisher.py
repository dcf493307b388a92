"""The cards the gateway hands out: each tenant's public card, and extended cards coming
back from backends, both re-pointed at the gateway's own interfaces and re-signed if
`card_signing` is set. The gateway never advertises a backend's address.

A public card is rendered once per (tenant, shape, public address, backend card
version) and kept: its bytes, strong ETag and Last-Modified stay the same until the
backend's card changes, so clients and caches can revalidate (304). Each shape (union,
v1.0, v0.3) is signed as it is served, so every one of them verifies.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

from a2a.types import a2a_pb2 as pb

from gateway.auth.card import card_security, with_security
from gateway.call import CallContext
from gateway.cards.addresses import PublicAddress
from gateway.cards.signing import CardSigner
from gateway.config.auth import effective
from gateway.config.models import GatewayConfig
from translators.card_serving import (
    ParsedCard,
    card_in_shape,
    gateway_interfaces,
    with_interfaces,
)
from translators.json_text import dump_bytes
from translators.protojson import dump_p10, parse_p10
from translators.vocabulary import JSON

_RENDERED_KEPT = 256


def minimal_card(tenant: str) -> JSON:
    """What the gateway serves for a backend whose card it does not know."""
    return {"name": tenant, "description": f"A2A agent '{tenant}' behind a2a-gateway",
            "version": "unknown", "capabilities": {}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


@dataclass(frozen=True)
class RenderedCard:
    body: bytes
    etag: str
    last_modified: str  # an HTTP date
    dropped: tuple[str, ...]  # what this shape could not say


class CardPublisher:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.signer = CardSigner(config.card_signing) if config.card_signing else None
        self.address = PublicAddress(config)
        self._rendered: OrderedDict[tuple[Any, ...], RenderedCard] = OrderedDict()
        self._security = {name: card_security(effective(config.auth, t.auth))
                          for name, t in config.tenants.items()}
        self._started = time.time()

    def _interfaces(self, base: str, grpc: str | None, path_tenant: str | None) -> list[JSON]:
        return gateway_interfaces(base, grpc, path_tenant, tuple(self.config.versions))

    def public(self, *, tenant: str, path_tenant: str | None, http_base: str,
               backend: ParsedCard | None, card_version: int, card_modified: float,
               shape: str) -> RenderedCard:
        if self.signer is not None:  # a signed card names the configured address only
            http_base = self.address.fallback_base()
        grpc = self.address.grpc_target(http_base)
        key = (tenant, path_tenant, shape, http_base, grpc, card_version)
        found = self._rendered.get(key)
        if found is not None:
            self._rendered.move_to_end(key)
            return found
        card = with_security(with_interfaces(backend.p10 if backend else minimal_card(tenant),
                                             self._interfaces(http_base, grpc, path_tenant)),
                             self._security.get(tenant))
        doc, dropped = card_in_shape(card, backend.held if backend else {}, shape)
        if self.signer is not None:
            doc = self.signer.sign(doc)
        body = dump_bytes(doc)
        modified = card_modified if backend else self._started
        rendered = RenderedCard(body, f'"{hashlib.sha256(body).hexdigest()[:32]}"',
                                formatdate(modified, usegmt=True), tuple(dropped))
        self._rendered[key] = rendered
        if len(self._rendered) > _RENDERED_KEPT:
            self._rendered.popitem(last=False)
        return rendered

    def rewrite_extended(self, card: pb.AgentCard, ctx: CallContext) -> pb.AgentCard:
        """A backend's extended card, listing the gateway's interfaces (and signed, in the
        v1.0 shape: a v0.3 client's translation drops the signatures, which cover the
        v1.0 document only)."""
        base = self.address.fallback_base() if self.signer is not None else (
            ctx.facts.public_base() if ctx.facts.public_base else self.address.fallback_base())
        tenant = ctx.tenant or ""
        path_tenant = tenant if tenant != self.config.default_tenant else None
        out = with_security(
            with_interfaces(dump_p10(card),
                            self._interfaces(base, self.address.grpc_target(base), path_tenant)),
            self._security.get(tenant))
        if self.signer is not None:
            out = self.signer.sign(out)
        return parse_p10(out, pb.AgentCard, error="InvalidAgentResponseError")
