"""The calls that make the migration series exist for tests/deploy/test_dashboards.py:
two tenants in migration mode, a canary with shadow copies and a candidate that refuses
connections (its rollback), each counter's rise checked against a scrape before them."""

from __future__ import annotations

from typing import Any

import aiohttp

from gateway.migration.sticky import arm_for
from tests.deploy.promql_support import Exposition
from tests.support.helpers import v03
from tests.support.waiting import wait_until


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        assert resp.status == 200
        return dict(await resp.json())


def m03(text: str) -> dict[str, Any]:
    return {"message": {"kind": "message", "messageId": f"m-{text}", "role": "user",
                        "parts": [{"kind": "text", "text": text}]}}


async def scrape(http: aiohttp.ClientSession, base: str) -> str:
    async with http.get(base + "/metrics") as resp:
        assert resp.status == 200
        return await resp.text()


CANARY_SHARE = 0.5


def migrating(primary: str, candidate: str, **migration: Any) -> dict[str, Any]:
    return {**v03(primary), "migration": {"candidate": v03(candidate)["backend"], **migration}}


def _request_ids(tenant: str) -> dict[str, str]:
    """arm -> a request id whose stable hash sends a new conversation (no context, no
    principal) of ``tenant`` to that arm at CANARY_SHARE: each arm gets one, by design."""
    chosen: dict[str, str] = {}
    i = 0
    while len(chosen) < 2:
        rid = f"dashboard-{i}"
        chosen.setdefault(arm_for(tenant, f"request:{rid}", CANARY_SHARE), rid)
        i += 1
    return chosen


async def migrate(http: aiohttp.ClientSession, base: str) -> None:
    """Calls of the two migrating tenants. `shop` (canary, shadow copies of what the
    primary answers): a new conversation per arm; the primary's copied to the candidate,
    which words its artifact differently (disagree, a `text` difference); a GetTask of the
    primary's task (not copied). `gone` (every new
    conversation to a candidate that refuses connections): fallbacks to the primary, until
    the second makes the rollback's window breach and the canary is rolled back.

    The counters are the process's (other tests' gateways count in them too): what these
    calls counted is the rise from a scrape before them."""
    before = Exposition(await scrape(http, base))
    tasks: dict[str, str] = {}
    for arm, rid in sorted(_request_ids("shop").items()):
        sent = await rpc(http, base + "/shop/", "message/send", m03(f"task: {arm}"),
                          {"X-Request-ID": rid})
        assert sent["result"]["status"]["state"] == "completed", sent
        tasks[arm] = sent["result"]["id"]
    got = await rpc(http, base + "/shop/", "tasks/get", {"id": tasks["primary"]})
    assert got["result"]["id"] == tasks["primary"], got
    for i in range(2):
        sent = await rpc(http, base + "/gone/", "message/send", m03(f"gone {i}"))
        assert sent["result"]["parts"][0]["text"] == f"echo: gone {i}", sent  # the primary

    shop_candidate = {"tenant": "shop", "arm": "candidate", "verdict": "ok"}
    counted = {  # series -> labels -> the rise these calls make
        "a2a_gateway_migration_shadow_comparisons_total": [
            ({"tenant": "shop", "verdict": "disagree"}, 1)],  # the SendMessage copy
        "a2a_gateway_migration_shadow_differences_total": [
            ({"tenant": "shop", "kind": "text"}, 1)],
        # one conversation the candidate served and the shadow copy it answered
        "a2a_gateway_migration_calls_total": [
            (shop_candidate, 2), ({"tenant": "shop", "arm": "primary", "verdict": "ok"}, 2),
            ({"tenant": "gone", "arm": "primary", "verdict": "ok"}, 2)],
        "a2a_gateway_migration_fallbacks_total": [({"tenant": "gone"}, 2)],
        "a2a_gateway_migration_moves_total": [
            ({"tenant": "gone", "action": "rollback", "by": "automatic"}, 1)]}

    def rises(exposed: Exposition) -> dict[tuple[str, str], float]:
        return {(series, str(labels)): exposed.value(series, **labels)
                - before.value(series, **labels)
                for series, wanted in counted.items() for labels, _ in wanted}

    expected = {(series, str(labels)): rise
                for series, wanted in counted.items() for labels, rise in wanted}
    behind = [key for key in expected if "comparisons" in key[0] or "moves" in key[0]]

    async def settled() -> dict[tuple[str, str], float] | None:  # the copies and the
        seen = rises(Exposition(await scrape(http, base)))  # rollback run behind the
        return seen if all(seen[key] for key in behind) else None  # answers

    seen = await wait_until(settled, "the shadow comparisons and the rollback counted",
                            interval=0.05)
    assert seen == expected
