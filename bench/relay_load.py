"""The push relay's load, one process (bench/relay.py starts it, pinned): an agent's side
posting notifications to a gateway's relay endpoint, and the client's webhook receiving
what the gateway delivers, on 127.0.0.1.

    python -m bench.relay_load '<spec as JSON>'   # prints the raw timings as JSON

Sender and receiver share this process, so a notification's time from the agent's POST
to the receiver's arrival is read on one clock. Each notification is a v0.3 Task (the
tenant's backend speaks v0.3, the client v1.0: the gateway relays and translates it),
numbered in its metadata; each task gets its own relay URL, sealed as the gateway seals a
client's push config (the seal key is the gateway's `push_relay.keys`).

Two phases:
- `serial`: one notification at a time, the next posted once the last arrived: the
  latency a delivery has when nothing else is going on (the first `warmup` not kept);
- `load`: `tasks` agents at once, each posting `per_task` notifications of its own task
  one after another (the next once the gateway answered 202, as an agent would), the
  receiver counting arrivals; the gateway's (and the store's) CPU over the phase from
  /proc (with any child process).

Every phase is bounded by its count and by `timeout` seconds; what has not arrived by
then is reported missing, never waited for longer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from bench.fastload import tree_cpu_seconds
from gateway.relay.seals import Sealer, decode_key
from translators.webhooks import RelayTarget

TOKEN = "relay-bench-token"  # the relay token the agent was given, in every seal


def seal(key: str, receiver: str, task_id: str) -> str:
    """The relay URL's sealed part a v1.0 client's push config for ``receiver`` gets
    when the task's backend speaks v0.3 (tenant `t`)."""
    target = RelayTarget(url=receiver, client_version="1.0", backend_version="0.3",
                         tenant="t", relay_token=TOKEN, issued_at=int(time.time()),
                         token="client-token", authentication=None, config_id="c1",
                         task_id=task_id)
    return Sealer([decode_key(key)], 0).seal(target)


def notification(task_id: str, n: int) -> bytes:
    """What a v0.3 agent posts about its task: the task, numbered in its metadata."""
    return json.dumps({"kind": "task", "id": task_id, "contextId": "bench",
                       "status": {"state": "working"}, "metadata": {"n": n}}).encode()


@dataclass
class Arrivals:
    """What the receiver got: each (task, n)'s first arrival time, and each task's
    numbers in arrival order (order and duplicates are checked from them)."""

    at: dict[tuple[str, int], float] = field(default_factory=dict)
    order: dict[str, list[int]] = field(default_factory=dict)
    waiting: dict[tuple[str, int], asyncio.Future[float]] = field(default_factory=dict)

    async def hook(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        task = json.loads(await request.read())["task"]
        key = (task["id"], int(task["metadata"]["n"]))
        self.order.setdefault(key[0], []).append(key[1])
        self.at.setdefault(key, now)
        waiter = self.waiting.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(now)
        return web.Response(status=200)

    def expect(self, key: tuple[str, int]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if key in self.at:
            future.set_result(self.at[key])
        else:
            self.waiting[key] = future
        return future


class Agent:
    """Posts notifications to one gateway's relay endpoint."""

    def __init__(self, http: aiohttp.ClientSession, gateway: str, key: str,
                 receiver: str) -> None:
        self.http, self.gateway, self.key, self.receiver = http, gateway, key, receiver

    def url(self, task_id: str) -> str:
        return f"{self.gateway}/_relay/{seal(self.key, self.receiver, task_id)}"

    async def post(self, url: str, task_id: str, n: int) -> str | None:
        """None when the gateway took it (202), else what it answered."""
        async with self.http.post(url, data=notification(task_id, n), headers={
                "Content-Type": "application/json",
                "X-A2A-Notification-Token": TOKEN}) as resp:
            text = await resp.text()
            return None if resp.status == 202 else f"HTTP {resp.status}: {text[:200]}"


async def serial(agent: Agent, arrivals: Arrivals, tag: str, count: int, warmup: int,
                 timeout: float) -> dict[str, Any]:
    task_id = f"{tag}-serial"
    url = agent.url(task_id)
    latency: list[float] = []
    ack: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + timeout
    for n in range(warmup + count):
        left = deadline - time.monotonic()
        if left <= 0:
            errors.append(f"serial: stopped at {n} of {warmup + count}: time is up")
            break
        arrived = arrivals.expect((task_id, n))
        sent = time.monotonic()
        refused = await agent.post(url, task_id, n)
        acked = time.monotonic()
        if refused is not None:
            errors.append(refused)
            continue
        try:
            got = await asyncio.wait_for(arrived, left)
        except TimeoutError:
            errors.append(f"serial: notification {n} not delivered in time")
            break
        if n >= warmup:
            latency.append((got - sent) * 1000)
            ack.append((acked - sent) * 1000)
    return {"latency_ms": latency, "ack_ms": ack, "errors": errors}


async def loaded(agent: Agent, arrivals: Arrivals, tag: str, tasks: int, per_task: int,
                 timeout: float, watch: dict[str, int]) -> dict[str, Any]:
    names = [f"{tag}-load-{i}" for i in range(tasks)]
    urls = {name: agent.url(name) for name in names}
    sent: dict[tuple[str, int], float] = {}
    errors: list[str] = []
    last_ack = 0.0

    async def one_agent(name: str) -> None:
        nonlocal last_ack
        for n in range(per_task):
            sent[(name, n)] = time.monotonic()
            refused = await agent.post(urls[name], name, n)
            last_ack = max(last_ack, time.monotonic())
            if refused is not None:
                errors.append(refused)
                sent.pop((name, n))

    cpu0 = {name: tree_cpu_seconds(pid) for name, pid in watch.items()}
    began = time.monotonic()
    posting = asyncio.gather(*(one_agent(name) for name in names))
    try:
        await asyncio.wait_for(posting, timeout)
    except TimeoutError:
        errors.append("load: the agents' posts did not end in time")
    left = max(0.0, began + timeout - time.monotonic())
    waiters = [arrivals.expect(key) for key in sent]
    if waiters:
        _done, pending = await asyncio.wait(waiters, timeout=left)
        for future in pending:
            future.cancel()
    cpu = {name: tree_cpu_seconds(pid) - cpu0[name] for name, pid in watch.items()}
    got = [key for key in sent if key in arrivals.at]
    return {
        "posted": tasks * per_task, "accepted": len(sent), "delivered": len(got),
        "accept_s": last_ack - began,
        "deliver_s": max((arrivals.at[key] for key in got), default=began) - began,
        "latency_ms": [(arrivals.at[key] - sent[key]) * 1000 for key in got],
        "order": {name: arrivals.order.get(name, []) for name in names},
        "per_task": per_task, "cpu_s": cpu, "errors": errors}


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    arrivals = Arrivals()
    app = web.Application()
    app.router.add_post("/{name}", arrivals.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", spec["receiver_port"]).start()
    receiver = f"http://127.0.0.1:{spec['receiver_port']}/hook"
    # As many connections as agents: a post never waits for another agent's connection.
    connector = aiohttp.TCPConnector(limit=spec["tasks"] + 1)
    try:
        async with aiohttp.ClientSession(connector=connector) as http:
            agent = Agent(http, spec["gateway"], spec["key"], receiver)
            out = {"serial": await serial(agent, arrivals, spec["tag"], spec["serial"],
                                          spec["warmup"], spec["timeout"])}
            out["load"] = await loaded(agent, arrivals, spec["tag"], spec["tasks"],
                                       spec["per_task"], spec["timeout"], spec["watch"])
    finally:
        await runner.cleanup()
    return out


def new_key() -> str:
    """A relay seal key, as `push_relay.keys` takes it."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.loads(sys.argv[1])))))
