"""`a2a-gateway usage`: who still calls a gateway, read from its /metrics."""

from __future__ import annotations

import json

import aiohttp

from gateway.doctor.usage import ALL, fetch, parse, render
from tests.doctor.doctor_support import cli
from tests.support.helpers import MakeGateway


def _send_v03(n: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": n, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": f"m{n}", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}}}


def _get_v10(n: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": n, "method": "GetTask", "params": {"id": "nope"}}


def _counts(usage_json: dict[str, object]) -> dict[tuple[str, str], int]:
    """Calls per client dialect, summed over the tenants (the counter is process-wide:
    other tests' tenants are in it too)."""
    tenants = usage_json["tenants"]
    assert isinstance(tenants, list)
    counts: dict[tuple[str, str], int] = {}
    for t in tenants:
        for d in t["dialects"]:
            key = (d["version"], d["binding"])
            counts[key] = counts.get(key, 0) + d["calls"]
    return counts


async def test_usage_after_calls(demo_agent: str, make_gateway: MakeGateway) -> None:
    gateway = await make_gateway({"demo": {"backend": {"url": demo_agent, "version": "0.3"}}})
    # The counter is process-wide: compare before and after.
    before = _counts((await fetch(gateway)).to_json())
    async with aiohttp.ClientSession() as session:
        for n in range(3):
            async with session.post(f"{gateway}/demo/", json=_send_v03(n)) as resp:
                assert resp.status == 200
        async with session.post(f"{gateway}/demo/", json=_get_v10(9),
                                headers={"A2A-Version": "1.0"}) as resp:
            assert resp.status == 200
        async with session.get(f"{gateway}/demo/v1/tasks/nope") as resp:
            assert resp.status == 404
    code, out = await cli("usage", gateway, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "a2a-gateway-usage/1" and doc["url"] == f"{gateway}/metrics"
    after = _counts(doc)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert delta[("0.3", "JSONRPC")] == 3
    assert delta[("1.0", "JSONRPC")] == 1
    assert delta[("0.3", "HTTP+JSON")] == 1
    # The counter is labelled by tenant: one view per configured tenant.
    demo = next(t for t in doc["tenants"] if t["tenant"] == "demo")
    assert all(t["tenant"] != ALL for t in doc["tenants"])
    assert abs(sum(v["share"] for v in demo["versions"]) - 1) < 0.01
    code, text = await cli("usage", gateway)
    assert code == 0
    assert "client dialect" in text and "JSONRPC 0.3" in text
    assert "v0.3 clients still call" in text


METRICS = """\
# HELP a2a_gateway_calls_total Calls handled
# TYPE a2a_gateway_calls_total counter
a2a_gateway_calls_total{tenant="travel",operation="SendMessage",client_version="0.3",\
client_binding="JSONRPC",backend_version="0.3",backend_binding="JSONRPC",outcome="ok"} 6.0
a2a_gateway_calls_total{tenant="travel",operation="GetTask",client_version="1.0",\
client_binding="GRPC",backend_version="0.3",backend_binding="JSONRPC",outcome="TASK_NOT_FOUND"} 2.0
a2a_gateway_calls_total{tenant="billing",operation="GetTask",client_version="1.0",\
client_binding="HTTP+JSON",backend_version="1.0",backend_binding="GRPC",outcome="ok"} 4.0
"""


def test_usage_per_tenant_when_labelled() -> None:
    usage = parse(METRICS, "http://gw/metrics")
    assert usage.calls == 12
    tenants = {t.tenant: t for t in usage.tenants}
    assert set(tenants) == {"travel", "billing"}
    travel = tenants["travel"]
    assert [(v.version, v.calls, v.share, v.errors) for v in travel.versions] == [
        ("0.3", 6, 0.75, 0), ("1.0", 2, 0.25, 2)]
    assert [(d.binding, d.version, d.calls) for d in travel.dialects] == [
        ("JSONRPC", "0.3", 6), ("GRPC", "1.0", 2)]
    text = render(usage)
    assert "== travel: 8 call(s)" in text and "75.0%" in text
    assert "v0.3 clients: none seen" in text  # billing
