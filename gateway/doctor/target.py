"""Finding an agent's card from what the user typed: a card URL, an agent's base URL, or
a gRPC `host:port` (whose card is the extended one, asked over both A2A services)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from a2a.types import a2a_pb2 as pb

from gateway.cards.backend import MAX_CARD_BYTES, WELL_KNOWN
from gateway.doctor.report import CardReport
from gateway.doctor.wire import Prober
from translators import operations as ops
from translators.card_serving import ParsedCard, parse_any_card, required_extensions
from translators.protojson import dump_p10
from translators.versions import V03, V10

LEGACY_WELL_KNOWN = "/.well-known/agent.json"


@dataclass
class Found:
    """A card and where it came from; ``raw`` is the document as served."""

    report: CardReport
    parsed: ParsedCard | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def is_grpc_target(target: str) -> bool:
    if target.startswith("grpc://"):
        return True
    if "://" in target:
        return False
    host, sep, port = target.rpartition(":")
    return bool(sep and host and port.isdigit())


def card_urls(target: str) -> list[str]:
    """The URLs to try, in order: the URL itself when it names a card, else the two
    well-known paths below it."""
    parts = urlsplit(target)
    if parts.path.endswith(".json"):
        return [target]
    base = target.rstrip("/")
    return [base + WELL_KNOWN, base + LEGACY_WELL_KNOWN]


def _shape(raw: dict[str, Any]) -> str:
    has_v10 = isinstance(raw.get("supportedInterfaces"), list)
    has_v03 = "url" in raw or "preferredTransport" in raw
    return "union" if has_v10 and has_v03 else (V10 if has_v10 else V03)


def card_report(url: str, parsed: ParsedCard, shape: str, raw: dict[str, Any]) -> CardReport:
    caps = parsed.p10.get("capabilities") or {}
    return CardReport(
        url=url, found=True, shape=shape, name=str(parsed.p10.get("name", "")),
        protocol_version=str(raw.get("protocolVersion", "")),
        capabilities={k: bool(caps.get(k)) for k in
                      ("streaming", "pushNotifications", "extendedAgentCard")},
        extensions=[str(e.get("uri")) for e in caps.get("extensions") or []
                    if isinstance(e, dict) and e.get("uri")],
        required_extensions=required_extensions(parsed.p10))


async def fetch_http_card(target: str, session: aiohttp.ClientSession) -> Found:
    errors: list[str] = []
    for url in card_urls(target):
        try:
            timeout = aiohttp.ClientTimeout(total=8, sock_connect=3)
            async with session.get(url, headers={"Accept": "application/json"},
                                   timeout=timeout) as resp:
                raw = await resp.content.read(MAX_CARD_BYTES + 1)
                if resp.status != 200:
                    errors.append(f"{url}: HTTP {resp.status}")
                    continue
            doc = json.loads(raw)
            parsed = parse_any_card(doc)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            errors.append(f"{url}: {str(exc) or type(exc).__name__}")
            continue
        except Exception as exc:  # a document that is not a card
            errors.append(f"{url}: not an agent card ({type(exc).__name__}: {exc})"[:300])
            continue
        return Found(card_report(url, parsed, _shape(doc), doc), parsed, doc)
    return Found(CardReport(url=card_urls(target)[0], error="; ".join(errors)))


async def fetch_grpc_card(target: str, session: aiohttp.ClientSession) -> Found:
    """GetExtendedAgentCard (v1.0), then GetAgentCard (v0.3): a gRPC agent's only card."""
    target = target.removeprefix("grpc://").rstrip("/")
    errors: list[str] = []
    for version in (V10, V03):
        prober = Prober(target, "GRPC", version, session)
        try:
            out = await prober.call(ops.EXTENDED_CARD, pb.GetExtendedAgentCardRequest())
        finally:
            await prober.close()
        if out.error is not None or not isinstance(out.result, pb.AgentCard):
            detail = out.error.message if out.error else "no card"
            errors.append(f"gRPC {version}: {out.error.name if out.error else ''} {detail}")
            continue
        p10 = dump_p10(out.result)
        parsed = parse_any_card(p10)
        report = card_report(f"grpc://{target}", parsed, f"grpc {version}", p10)
        return Found(report, parsed, p10)
    return Found(CardReport(url=f"grpc://{target}", error="; ".join(errors)))


@dataclass(frozen=True)
class Advertised:
    url: str
    binding: str
    version: str
    tenant: str = ""


def advertised_interfaces(found: Found) -> list[Advertised]:
    """The interfaces the card lists, as v1.0 reads them (a v0.3 card's url and
    preferredTransport plus additionalInterfaces, all at its one protocolVersion)."""
    if found.parsed is None:
        return []
    out: list[Advertised] = []
    for entry in found.parsed.p10.get("supportedInterfaces") or []:
        if not isinstance(entry, dict):
            continue
        item = Advertised(str(entry.get("url", "")), str(entry.get("protocolBinding", "")),
                          str(entry.get("protocolVersion") or V03),
                          str(entry.get("tenant", "")))
        if item.url and item not in out:
            out.append(item)
    return out
