"""A rate limit holds across the processes that share a state store: the two workers of
one gateway (SQLite), and two gateway replicas (Redis). Each call goes on a new
connection, so the kernel spreads them over the workers; the replicas take turns."""

from __future__ import annotations

import hashlib
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
from replica_support import demo_agent, gateway

KEY = "shared-limit-key-0123456789"
BURST = 4


def _auth() -> dict[str, Any]:
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    return {"api_keys": {"keys": [{"principal": "p", "sha256": digest}]},
            # Slow enough that no token comes back while the test runs.
            "rate_limits": {"principal": {"rate": 0.01, "burst": BURST}}}


async def statuses(urls: list[str], calls: int) -> list[int]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}}}
    got = []
    for i in range(calls):
        # A new connection each time: another worker may take it.
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(
                force_close=True)) as http, http.post(
                urls[i % len(urls)], json=body, headers={"X-API-Key": KEY}) as resp:
            got.append(resp.status)
    return got


async def test_two_workers_share_one_bucket(tmp_path: Path) -> None:
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        url = gateway(stack, tmp_path, "gw", agent, workers=2, auth=_auth(),
                      state={"path": str(tmp_path / "state.db")})[0] + "/t"
        got = await statuses([url], 3 * BURST)
    assert got.count(200) == BURST and got.count(429) == 2 * BURST, got


async def test_two_replicas_share_one_bucket_through_redis(tmp_path: Path,
                                                           redis_url: str) -> None:
    state = {"backend": "redis", "url": redis_url, "key_prefix": f"{tmp_path.name}:"}
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        urls = [gateway(stack, tmp_path, name, agent, state=state, auth=_auth())[0] + "/t"
                for name in ("a", "b")]
        got = await statuses(urls, 3 * BURST)
    assert got.count(200) == BURST and got.count(429) == 2 * BURST, got
