"""A state-store outage degrades, never loses (issue 27, README "State"): two replicas on
a real redis-server that is killed (SIGKILL) in the middle of a load of SendMessage calls
and started again. Every call either is answered with its task — and then its owner
reaches that task through both replicas afterwards — or is refused as unavailable
(StoreUnavailableError with a retry hint, never an Internal error); the first calls after
the store is back succeed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp

from tests.state.replica_support import KEYS, V10, demo_agent, gateway, message, rpc
from tests.support.redis_process import RedisProcess
from tests.support.waiting import wait_until

CALLS = 90  # SendMessage calls in all, AT_ONCE at a time, alternating replicas
AT_ONCE = 3
KILL_AFTER = 30  # answers before the store is killed
DOWN_CALLS = 6  # calls made while it is down (then it is started again)


def _auth() -> dict[str, Any]:
    return {"required": True, "api_keys": {"keys": [
        {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
        for p, k in KEYS.items()]}}


def _reason(reply: dict[str, Any]) -> str:
    data = reply.get("error", {}).get("data") or [{}]
    return str(data[0].get("reason", ""))


async def test_calls_during_a_redis_outage_are_kept_or_refused(
        tmp_path: Path, own_redis: RedisProcess) -> None:
    state = {"backend": "redis", "url": own_redis.url, "timeout": 1.0,
             "key_prefix": f"out-{uuid.uuid4().hex[:8]}:"}
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        started = [gateway(stack, tmp_path, name, agent, state=state, auth=_auth())
                   for name in ("a", "b")]
        replicas = [url + "/t" for url, _ in started]
        acknowledged: list[str] = []
        refused: list[dict[str, Any]] = []
        failed_after: list[dict[str, Any]] = []  # refused though made after the restart
        down_reads: list[dict[str, Any]] = []
        down_rest: list[tuple[int, str | None, str]] = []
        after_kill = 0  # answers (either way) to calls made while the store was down
        killed, restarted = asyncio.Event(), asyncio.Event()
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(CALLS):
            queue.put_nowait(i)

        async def caller(http: aiohttp.ClientSession) -> None:
            nonlocal after_kill
            while not queue.empty():
                i = queue.get_nowait()
                if after_kill >= DOWN_CALLS:
                    await restarted.wait()  # the rest of the load runs after recovery
                down = killed.is_set() and not restarted.is_set()
                back = restarted.is_set()
                reply = await rpc(http, replicas[i % 2], "alice", "SendMessage",
                                  message(f"input: {i}", uuid.uuid4().hex))
                if "result" in reply:
                    acknowledged.append(reply["result"]["task"]["id"])
                else:
                    refused.append(reply)
                    if back:
                        failed_after.append(reply)
                after_kill += down
                if len(acknowledged) >= KILL_AFTER and not killed.is_set():
                    own_redis.kill()
                    killed.set()

        async def restarter(http: aiohttp.ClientSession) -> None:
            await killed.wait()
            await wait_until(lambda: after_kill >= DOWN_CALLS, "the calls while it is down",
                             timeout=60)
            # A read that needs the store (the ownership check) is refused the same way.
            down_reads.extend([await rpc(http, base, "alice", "GetTask",
                                         {"id": acknowledged[0]}) for base in replicas])
            async with http.get(f"{replicas[0]}/tasks/{acknowledged[0]}", headers={
                    **V10, "x-api-key": KEYS["alice"]}) as resp:  # REST: 503 + Retry-After
                down_rest.append((resp.status, resp.headers.get("Retry-After"),
                                  (await resp.json())["error"]["status"]))
            await asyncio.to_thread(own_redis.start)
            restarted.set()

        async with aiohttp.ClientSession() as http:
            first_after: list[dict[str, Any]] = []
            restarting = asyncio.create_task(restarter(http))
            await asyncio.gather(*(caller(http) for _ in range(AT_ONCE)))
            await restarting
            # Once more through each replica, alone, after the load.
            for base in replicas:
                first_after.append(await rpc(http, base, "alice", "SendMessage",
                                             message("input: after", uuid.uuid4().hex)))
            # Every acknowledged task: reachable by its owner through both replicas.
            lost = []
            for task in acknowledged:
                for base in replicas:
                    got = await rpc(http, base, "alice", "GetTask", {"id": task})
                    if got.get("result", {}).get("id") != task:
                        lost.append((task, base, got))
    assert lost == []
    assert len(refused) >= DOWN_CALLS
    assert len(acknowledged) + len(refused) == CALLS
    assert {(r["error"]["code"], _reason(r)) for r in refused + down_reads} == \
        {(-32603, "STORE_UNAVAILABLE")}
    assert all("retry" in r["error"]["message"] and
               r["error"]["data"][0]["metadata"]["retry_after"] == "1"
               for r in refused + down_reads)
    assert len(down_reads) == 2
    assert down_rest == [(503, "1", "UNAVAILABLE")]
    assert failed_after == []
    assert [r.get("error") for r in first_after] == [None, None]
    assert len(acknowledged) > KILL_AFTER  # calls after the restart were acknowledged
    # Each refusal's cause is in the log, as a warning; nothing at error level (an
    # Internal error, a traceback) in either replica's log.
    lines = [json.loads(raw) for _, log in started for raw in log.read_text().splitlines()
             if raw.startswith("{")]
    causes = [line for line in lines if line.get("event") in (
        "task created but not recorded: the call is refused", "state store unavailable")]
    assert causes and all(line["level"] == "warning" and line["error"] for line in causes)
    assert [line for line in lines if line.get("level") in ("error", "critical")] == []


