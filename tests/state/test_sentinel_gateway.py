"""A gateway process on Redis behind Sentinel (docs/state.md, "Redis Sentinel and
failover"): SendMessage calls go on while the primary is killed (SIGKILL) and a replica
promoted; every task the gateway acknowledged is listed afterwards from the index (the
demo agent speaks v0.3, so ListTasks reads the index). Then the whole store goes away:
/readyz says degraded (200, `state: unavailable`), a call that needs no state (GetTask
without authentication) is served, and one that does (SendMessage, which records its
task) is refused as unavailable."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp

from tests.state.replica_support import V10, demo_agent, gateway, message
from tests.support.sentinel_process import SERVICE, sentinel_setup
from tests.support.waiting import wait_until

BEFORE = 20  # tasks acknowledged before the primary is killed
AFTER = 20  # tasks acknowledged after the promotion
CALLERS = 3


async def call(http: aiohttp.ClientSession, url: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=V10) as resp:
        return await resp.json()


async def listed(http: aiohttp.ClientSession, url: str) -> set[str]:
    ids: set[str] = set()
    token = ""
    while True:
        page = (await call(http, url, "ListTasks", {"pageSize": 100, "pageToken": token}))
        ids |= {task["id"] for task in page["result"]["tasks"]}
        token = page["result"].get("nextPageToken", "")
        if not token:
            return ids


async def readyz(http: aiohttp.ClientSession, base: str) -> tuple[int, dict[str, Any]]:
    async with http.get(base + "/readyz") as resp:
        return resp.status, await resp.json()


async def test_a_gateway_carries_on_through_a_failover_and_an_outage(tmp_path: Path) -> None:
    with sentinel_setup() as sentinels, demo_agent(tmp_path) as agent, ExitStack() as stack:
        state = {"backend": "redis", "timeout": 1.0, "key_prefix": f"gw-{uuid.uuid4().hex[:8]}:",
                 "sentinel": {"hosts": sentinels.hosts, "service": SERVICE,
                              "ack_timeout": 0.5, "failover_wait": 20}}
        base, log = gateway(stack, tmp_path, "gw", agent, state=state)
        url = base + "/t"
        acknowledged: list[str] = []
        refused: list[dict[str, Any]] = []
        promoted = asyncio.Event()
        after = 0

        async def caller(http: aiohttp.ClientSession) -> None:
            nonlocal after
            while after < AFTER:
                reply = await call(http, url, "SendMessage", message("input: hi",
                                                                     uuid.uuid4().hex))
                if "result" in reply:
                    acknowledged.append(reply["result"]["task"]["id"])
                    after += promoted.is_set()
                else:
                    refused.append(reply["error"])

        async with aiohttp.ClientSession() as http, asyncio.timeout(180):
            assert await readyz(http, base) == (200, {
                "status": "ready", "tenants": {"t": {"ready": True, "card": "ok"}},
                "state": "ok"})
            callers = [asyncio.create_task(caller(http)) for _ in range(CALLERS)]
            await wait_until(lambda: len(acknowledged) >= BEFORE, "calls before the kill",
                             timeout=60)
            old = sentinels.kill_primary()
            new = await asyncio.to_thread(sentinels.wait_for_promotion)
            promoted.set()
            await asyncio.gather(*callers)
            missing = set(acknowledged) - await listed(http, url)
            assert await readyz(http, base) == (200, {
                "status": "ready", "tenants": {"t": {"ready": True, "card": "ok"}},
                "state": "ok"})

            sentinels_log = sentinels.sentinel_log()
            # The whole store goes away: the sentinel and every Redis server.
            sentinels.stop_sentinel()
            for server in sentinels.servers.values():
                server.kill()
            status, report = await readyz(http, base)
            got = await call(http, url, "GetTask", {"id": acknowledged[0]})
            creating = await call(http, url, "SendMessage", message("input: hi", "c"))
    assert new != old and missing == set()
    assert sentinels_log.count("+switch-master") == 1, sentinels_log  # one failover
    assert len(refused) <= CALLERS and all(
        e["data"][0]["reason"] == "STORE_UNAVAILABLE" for e in refused), refused
    assert (status, report["status"], report["state"]) == (200, "degraded", "unavailable")
    assert got["result"]["id"] == acknowledged[0]
    assert creating["error"]["data"][0]["reason"] == "STORE_UNAVAILABLE"
    lines = [json.loads(raw) for raw in log.read_text().splitlines() if raw.startswith("{")]
    store_lines = [line for line in lines if line.get("event") in (
        "state store error", "state store available again", "state store not ready")]
    print("\n" + "\n".join(json.dumps(line) for line in store_lines))
    assert {"state store error", "state store available again", "state store not ready"} \
        <= {line["event"] for line in store_lines}
    assert [line for line in lines if line.get("level") in ("error", "critical")] == []
