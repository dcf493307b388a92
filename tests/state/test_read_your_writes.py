"""Read-your-writes across processes (issue 27, README "State"): a task created through
one worker or replica is seen by the very next call through another — listed (ListTasks
from the index, v0.3 agent), read by its owner (GetTask passes the ownership check) and
given a push config (CreateTaskPushNotificationConfig) — 200 times in a row, each time
crossing processes, with no wait in between.

Two workers of one gateway share a port, and the kernel picks the worker of each
connection: the test holds one keep-alive connection to each worker (found by the
`worker` of the call log line with the connection's X-Request-ID) and alternates. Two
replicas on one Redis are two ports: it alternates between them."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.state.replica_support import KEYS, V10, demo_agent, gateway
from tests.support.helpers import free_port, gateway_cmd, stop_process, write_config
from tests.support.waiting import wait_until

ROUNDS = 200
HOOK = "http://127.0.0.1:9/hook"  # never called: the push config is only registered


def _auth() -> dict[str, Any]:
    return {"required": True, "api_keys": {"keys": [
        {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
        for p, k in KEYS.items()]}}


_RELAY = {"webhook_allowlist": ["127.0.0.1"]}


class Client:
    """alice on one connection of her own to one gateway process."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))

    async def rpc(self, method: str, params: Any, rid: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {**V10, "x-api-key": KEYS["alice"], "X-Request-ID": rid}
        async with self.http.post(self.base, json=body, headers=headers) as resp:
            return await resp.json()


async def _rounds(first: Client, second: Client) -> list[str]:
    """ROUNDS creations, each checked at once through the other process; the misses."""
    misses: list[str] = []
    for i in range(ROUNDS):
        make, check = (first, second) if i % 2 == 0 else (second, first)
        ctx = uuid.uuid4().hex
        sent = await make.rpc("SendMessage", {"message": {
            "messageId": os.urandom(6).hex(), "role": "ROLE_USER", "contextId": ctx,
            "parts": [{"text": f"input: {i}"}]}}, f"s-{i}")
        task = sent["result"]["task"]["id"]
        listed = await check.rpc("ListTasks", {"contextId": ctx}, f"l-{i}")
        if [t["id"] for t in listed.get("result", {}).get("tasks", [])] != [task]:
            misses.append(f"round {i}: ListTasks {listed}")
        got = await check.rpc("GetTask", {"id": task}, f"g-{i}")
        if got.get("result", {}).get("id") != task:
            misses.append(f"round {i}: GetTask {got}")
        if i % 4 == 0:
            pushed = await check.rpc("CreateTaskPushNotificationConfig", {
                "taskId": task, "id": "c", "url": HOOK}, f"p-{i}")
            if pushed.get("result", {}).get("taskId") != task:
                misses.append(f"round {i}: CreateTaskPushNotificationConfig {pushed}")
    return misses


def _call_workers(log: Path) -> dict[str, int]:
    """Request id -> the worker that logged the call."""
    return {line["request_id"]: line["worker"] for line in
            (json.loads(raw) for raw in log.read_text().splitlines()
             if raw.startswith("{") and raw.endswith("}"))  # not a line still being written
            if line.get("event") == "call" and "worker" in line}


@asynccontextmanager
async def two_workers(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    port, demo = free_port(), free_port()
    config = write_config(tmp_path / "gw.yaml", {
        "listen": {"http": f"127.0.0.1:{port}"},
        "demo_agent": {"listen": f"127.0.0.1:{demo}"},
        "tenants": {"t": {"backend": {"url": f"http://127.0.0.1:{demo}/", "version": "0.3"}}},
        "default_tenant": "t", "auth": _auth(), "push_relay": _RELAY, "workers": 2})
    log = tmp_path / "gw.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(gateway_cmd(config), stdout=out, stderr=subprocess.STDOUT)
    try:
        def ready() -> bool:
            assert proc.poll() is None, log.read_text()[-2000:]
            return "workers ready" in log.read_text()

        await wait_until(ready, "workers ready", timeout=60, interval=0.05)
        yield f"http://127.0.0.1:{port}/", log
    finally:
        stop_process(proc)


async def _pinned(base: str, log: Path) -> dict[int, Client]:
    """A client on a connection to each worker."""
    pinned: dict[int, Client] = {}
    for n in range(40):
        client = Client(base)
        rid = f"probe-{n}"
        await client.rpc("GetTask", {"id": "none"}, rid)
        workers = await wait_until(lambda r=rid: r in (w := _call_workers(log)) and w,
                                   f"the call line of {rid}")
        if workers[rid] in pinned:
            await client.http.close()
        else:
            pinned[workers[rid]] = client
        if len(pinned) == 2:
            return pinned
    raise AssertionError("40 connections, all to one worker")


async def test_two_workers_read_their_writes(tmp_path: Path) -> None:
    async with two_workers(tmp_path) as (base, log):
        pinned = await _pinned(base, log)
        try:
            misses = await _rounds(pinned[0], pinned[1])
        finally:
            for client in pinned.values():
                await client.http.close()
        # A call's line is written after its answer: wait for every round's lines.
        wanted = {f"{kind}-{i}" for i in range(ROUNDS) for kind in "slg"}
        workers = await wait_until(lambda: wanted <= (w := _call_workers(log)).keys() and w,
                                   "every round's call lines")
    assert misses == []
    # Every check went through the other worker than the creation.
    assert [i for i in range(ROUNDS) if workers[f"s-{i}"] == workers[f"l-{i}"]
            or workers[f"s-{i}"] == workers[f"g-{i}"]] == []


async def test_two_replicas_on_redis_read_their_writes(tmp_path: Path, redis_url: str) -> None:
    state = {"backend": "redis", "url": redis_url,
             "key_prefix": f"ryw-{uuid.uuid4().hex[:8]}:"}
    relay = {**_RELAY, "keys": [base64.urlsafe_b64encode(os.urandom(32)).decode()]}
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        a, _ = gateway(stack, tmp_path, "a", agent, state=state, auth=_auth(), push_relay=relay)
        b, _ = gateway(stack, tmp_path, "b", agent, state=state, auth=_auth(), push_relay=relay)
        first, second = Client(a + "/t"), Client(b + "/t")
        try:
            misses = await _rounds(first, second)
        finally:
            await first.http.close()
            await second.http.close()
    assert misses == []
