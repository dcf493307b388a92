"""`a2a-gateway usage URL`: who still calls, from a gateway's /metrics.

Reads the counter `a2a_gateway_calls_total` (gateway/observability/metrics.py) and says, per tenant
when the counter carries a `tenant` label (else for the gateway as a whole), which client
versions and bindings call and how much: the numbers a team needs to decide when v0.3
can go.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from gateway.doctor.render import table

COUNTER = "a2a_gateway_calls_total"
SCHEMA_ID = "a2a-gateway-usage/1"
ALL = "*"  # the tenant of an unlabelled counter: every tenant


@dataclass
class Share:
    version: str
    binding: str  # "" in the per-version rows
    calls: int
    share: float
    errors: int = 0


@dataclass
class TenantUsage:
    tenant: str
    calls: int = 0
    versions: list[Share] = field(default_factory=list)
    dialects: list[Share] = field(default_factory=list)


@dataclass
class Usage:
    url: str
    calls: int
    tenants: list[TenantUsage]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA_ID, **asdict(self)}


def metrics_url(url: str) -> str:
    return url if url.rstrip("/").endswith("/metrics") else url.rstrip("/") + "/metrics"


def parse(text: str, url: str = "") -> Usage:
    counts: dict[tuple[str, str, str], list[int]] = {}  # (tenant, version, binding)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name != COUNTER:
                continue
            key = (s.labels.get("tenant", ALL), s.labels.get("client_version", "?"),
                   s.labels.get("client_binding", "?"))
            entry = counts.setdefault(key, [0, 0])
            entry[0] += int(s.value)
            if s.labels.get("outcome", "ok") != "ok":
                entry[1] += int(s.value)
    tenants: dict[str, TenantUsage] = {}
    for (tenant, version, binding), (calls, errors) in sorted(counts.items()):
        t = tenants.setdefault(tenant, TenantUsage(tenant))
        t.calls += calls
        t.dialects.append(Share(version, binding, calls, 0.0, errors))
    for t in tenants.values():
        by_version: dict[str, list[int]] = {}
        for d in t.dialects:
            d.share = round(d.calls / t.calls, 4) if t.calls else 0.0
            v = by_version.setdefault(d.version, [0, 0])
            v[0] += d.calls
            v[1] += d.errors
        t.versions = [Share(v, "", c, round(c / t.calls, 4) if t.calls else 0.0, e)
                      for v, (c, e) in sorted(by_version.items())]
        t.dialects.sort(key=lambda d: (-d.calls, d.version, d.binding))
    return Usage(url, sum(t.calls for t in tenants.values()), list(tenants.values()))


async def fetch(url: str) -> Usage:
    target = metrics_url(url)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession() as session, session.get(target, timeout=timeout) as resp:
        if resp.status != 200:
            raise ValueError(f"{target}: HTTP {resp.status}")
        return parse(await resp.text(), target)


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def render(usage: Usage) -> str:
    lines = [f"calls counted by {usage.url}: {usage.calls}"]
    for t in usage.tenants:
        name = "all tenants (the counter has no tenant label)" if t.tenant == ALL else t.tenant
        lines += ["", f"== {name}: {t.calls} call(s)"]
        lines += table([[f"v{v.version}", str(v.calls), _pct(v.share), str(v.errors)]
                        for v in t.versions], ["client version", "calls", "share", "errors"])
        lines.append("")
        lines += table([[f"{d.binding} {d.version}", str(d.calls), _pct(d.share), str(d.errors)]
                        for d in t.dialects], ["client dialect", "calls", "share", "errors"])
        old = next((v for v in t.versions if v.version == "0.3"), None)
        lines.append("")
        lines.append("  v0.3 clients: none seen since the gateway started" if old is None
                     else f"  v0.3 clients still call: {old.calls} call(s), {_pct(old.share)}")
    if not usage.tenants:
        lines.append("no calls counted yet")
    return "\n".join(lines) + "\n"
