"""Reading any agent card, choosing a backend interface, and building the card the
gateway serves (reference §4.6, §4.7; seed notes "Will the two sides connect?").

Pure: the fetching and caching live in gateway/cards.py.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from translators.j03.cards import STATE_TRANSITION_HISTORY, card_for_v03, card_to_p10
from translators.j03.common import need_dict
from translators.loss import LossReport
from translators.versions import V03, V10, normalize_version
from translators.vocabulary import JSON

BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")


# A served card's shape is V10, V03, or this one: both side by side (§4.6).
UNION = "union"


@dataclass(frozen=True)
class ParsedCard:
    p10: JSON  # the card as v1.0 describes it (supportedInterfaces, capabilities, ...)
    # What only a v0.3 card can say (stateTransitionHistory), by path, for v0.3 readers.
    held: dict[str, Any] = field(default_factory=dict)


def parse_any_card(data: Any) -> ParsedCard:
    """A card of either version, or a union card. `supportedInterfaces` marks a v1.0 (or
    union) card; a v0.3 card is read by its legacy fields (py `parse_agent_card`)."""
    card = need_dict(data, "card")
    if isinstance(card.get("supportedInterfaces"), list):
        p10 = {k: v for k, v in card.items() if k not in _J03_ONLY}
        for interface in p10["supportedInterfaces"]:
            if isinstance(interface, dict) and interface.get("protocolVersion"):
                interface["protocolVersion"] = normalize_version(interface["protocolVersion"])
        # A union card's schemes carry both shapes; keep the v1.0 wrapper keys only.
        schemes = p10.get("securitySchemes")
        if isinstance(schemes, dict):
            p10["securitySchemes"] = {name: {k: v for k, v in s.items() if k.endswith("Scheme")}
                                      for name, s in schemes.items() if isinstance(s, dict)}
        held: dict[str, Any] = {}
        caps = p10.get("capabilities")
        if isinstance(caps, dict) and "stateTransitionHistory" in caps:  # a union card's
            caps = p10["capabilities"] = dict(caps)
            held[STATE_TRANSITION_HISTORY] = caps.pop("stateTransitionHistory")
        return ParsedCard(p10, held)
    loss = LossReport(answering=True)
    return ParsedCard(card_to_p10(card, loss), loss.held)


_J03_ONLY = frozenset({"url", "protocolVersion", "preferredTransport", "additionalInterfaces",
                       "supportsAuthenticatedExtendedCard", "security"})


def pick_interface(card: JSON, *, prefer_version: str = V10,
                   bindings: tuple[str, ...] = BINDINGS,
                   versions: tuple[str, ...] = (V10, V03)) -> JSON | None:
    """The interface the gateway calls: among the entries whose binding it is allowed to
    use and whose version it speaks, the preferred version first, then the order of
    ``bindings``, then the card's own order (a card lists its preferred entry first)."""
    candidates = []
    for index, entry in enumerate(card.get("supportedInterfaces") or []):
        if not isinstance(entry, dict):
            continue
        binding = entry.get("protocolBinding")
        version = normalize_version(entry.get("protocolVersion"))
        if binding in bindings and version in versions:
            rank = (version != prefer_version, bindings.index(binding), index)
            candidates.append((rank, {**entry, "protocolVersion": version}))
    return min(candidates, key=lambda c: c[0])[1] if candidates else None


def capability(card: JSON | None, name: str) -> bool | None:
    """A capability the backend declares; None when no card is known (no pre-check)."""
    if card is None:
        return None
    value = (card.get("capabilities") or {}).get(name)
    return bool(value)


def required_extensions(card: JSON | None) -> list[str]:
    if card is None:
        return []
    return [e["uri"] for e in (card.get("capabilities") or {}).get("extensions") or []
            if isinstance(e, dict) and e.get("required") and e.get("uri")]


def with_interfaces(card: JSON, interfaces: list[JSON]) -> JSON:
    """The backend's card re-pointed at the gateway. Any rewrite invalidates the
    backend's JWS signatures (§4.6), so they are dropped here; the gateway may re-sign."""
    out = copy.deepcopy(card)
    out["supportedInterfaces"] = interfaces
    out.pop("signatures", None)
    return out


def card_in_shape(card: JSON, held: dict[str, Any], shape: str) -> tuple[JSON, list[str]]:
    """The card in one shape, and what that shape could not say (paths).

    - ``1.0``: the v1.0 card, valid for strict v1.0 validators;
    - ``0.3``: the v0.3 card, built from the v0.3 interfaces only (a v0.3 card cannot say
      which entry speaks which version);
    - ``union``: one document both SDK generations parse (§4.6): the v1.0 card with the
      v0.3 fields beside it, nested objects deep-merged. Strict v1.0 validators refuse
      the extra fields.
    """
    loss = LossReport(answering=True, held=dict(held))
    if shape == V10:
        return card, loss.fields()
    has_v03 = any(i.get("protocolVersion") == V03 for i in card.get("supportedInterfaces", []))
    if shape == UNION and not has_v03:
        return card, loss.fields()
    legacy = card_for_v03(card, loss)
    return (legacy if shape == V03 else _deep_merge(card, legacy)), loss.fields()


def _deep_merge(base: JSON, extra: JSON) -> JSON:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        elif key not in out:
            out[key] = value
    return out


def gateway_interfaces(http_base: str, grpc_target: str | None, tenant: str | None,
                       versions: tuple[str, ...]) -> list[JSON]:
    """The gateway's own interfaces: JSON-RPC, HTTP+JSON and gRPC for every version
    served. HTTP URLs carry the tenant in the path (v0.3 has no tenant field); gRPC
    carries it in the interface's `tenant` (v1.0 requests copy it)."""
    base = http_base.rstrip("/") + (f"/{tenant}" if tenant else "")
    out: list[JSON] = []
    for version in versions:
        out.append({"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": version})
        out.append({"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": version})
        if grpc_target:
            entry: JSON = {"url": grpc_target, "protocolBinding": "GRPC",
                           "protocolVersion": version}
            if tenant and version == V10:
                entry["tenant"] = tenant
            out.append(entry)
    return out
