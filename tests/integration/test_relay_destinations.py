"""The push relay per destination (docs/push-relay.md, "Destinations") and its dead
letters on the admin listener ("Dead letters"), with real gateway processes on a SQLite
store and a real receiver (aiohttp) on 127.0.0.1:

- many tasks to one receiver: never more than `per_destination` deliveries at once, and
  waiting for a slot spends no attempt;
- a receiver that fails: the circuit opens after `breaker.failures`, deliveries are put
  off without an attempt (every request the receiver saw is an attempt counted), a probe
  per cool-down; it comes back: the circuit closes, everything arrives, in order per task;
- `/_admin/relay/dead-letters` lists, shows, replays and drops a dead letter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.helpers import free_port
from tests.support.relay_support import FAST, Gateway, gateway, notify, sealed_for
from tests.support.waiting import wait_until


@dataclass
class Receiver:
    """Counts every request and the most it held at once (each held ``hold`` seconds:
    the time is the thing under test); answers 503 while ``down``."""

    port: int = field(default_factory=free_port)
    hold: float = 0.0
    down: bool = False
    requests: list[tuple[str, int]] = field(default_factory=list)  # (path, n)
    delivered: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # path → (id, n)
    now: int = 0
    peak: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def count(self) -> int:
        return sum(len(v) for v in self.delivered.values())

    async def hook(self, request: web.Request) -> web.Response:
        n = (await request.json())["task"]["metadata"]["n"]
        self.requests.append((request.path, n))
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(self.hold)
            if self.down:
                return web.json_response({}, status=503)
            self.delivered.setdefault(request.path, []).append(
                (request.headers["webhook-id"], n))
            return web.json_response({})
        finally:
            self.now -= 1

    @asynccontextmanager
    async def up(self) -> AsyncIterator[None]:
        app = web.Application()
        app.router.add_post("/{name}", self.hook)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        try:
            yield
        finally:
            await runner.cleanup()


async def notify_all(gw: Gateway, hooks: Receiver, tasks: int, each: int) -> None:
    async with aiohttp.ClientSession() as http:
        seals = {t: sealed_for(f"{hooks.base}/p{t}", f"k{t}") for t in range(tasks)}
        for n in range(each):
            for t in range(tasks):
                await notify(http, gw, seals[t], f"k{t}", n)


def assert_in_order(hooks: Receiver, tasks: int, each: int) -> None:
    for t in range(tasks):
        got = hooks.delivered[f"/p{t}"]
        assert [n for _, n in got] == list(range(each)), t
        assert len({wid for wid, _ in got}) == each


async def metric(gw: Gateway, name: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(f"{gw.url}/metrics") as resp:
        text = await resp.text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name))


async def test_no_more_than_per_destination_at_once(tmp_path: Path) -> None:
    hooks = Receiver(hold=0.1)
    queue = {**FAST["queue"], "per_destination": 3}  # type: ignore[dict-item]
    with gateway(tmp_path, retries=3, queue=queue) as (gw, _):
        async with hooks.up():
            await notify_all(gw, hooks, tasks=20, each=2)
            await wait_until(lambda: hooks.count() >= 40, "40 deliveries", timeout=30)
    assert hooks.peak == 3  # 20 tasks due at once, 3 at a time to the one receiver
    assert_in_order(hooks, 20, 2)
    delivered = gw.lines("push relay delivered")
    assert len(delivered) == 40 and {line["attempts"] for line in delivered} == {1}


async def test_the_breaker_opens_spends_no_attempts_then_closes(tmp_path: Path) -> None:
    hooks = Receiver(down=True)
    queue = {**FAST["queue"], "per_destination": 2,  # type: ignore[dict-item]
             "breaker": {"failures": 3, "cool_down": 0.5}}
    with gateway(tmp_path, retries=30, queue=queue) as (gw, _):
        async with hooks.up():
            await notify_all(gw, hooks, tasks=5, each=3)
            await wait_until(lambda: gw.lines("push relay circuit opened"), "it opens")
            # Two probes failed: the circuit was open two cool-downs, half-open twice.
            await wait_until(lambda: len(gw.lines("push relay circuit opened")) >= 3,
                             "two failed probes")
            opened = gw.lines("push relay circuit opened")
            assert opened[0]["destination"] == hooks.base and not opened[0]["probe_failed"]
            assert all(line["probe_failed"] for line in opened[1:])
            # 3 failures open it (and at most one more was in flight: 2 at once), then
            # one probe per cool-down (+1: the next may be on its way as we count): 15
            # deliveries retried every ≤0.3 s would be dozens.
            assert len(hooks.requests) <= 3 + 1 + len(opened) + 1
            assert await metric(gw, 'a2a_gateway_push_deliveries_total{outcome="postponed"}') > 0
            assert await metric(gw, "a2a_gateway_push_circuit_openings_total") >= 3
            hooks.down = False
            await wait_until(lambda: hooks.count() >= 15, "15 deliveries", timeout=30)
            await wait_until(lambda: gw.lines("push relay circuit closed"), "it closes")
            assert await metric(gw, "a2a_gateway_push_circuits_open ") == 0
    assert_in_order(hooks, 5, 3)
    # Put off while open, no attempt spent: every attempt counted is one request seen.
    delivered = gw.lines("push relay delivered")
    assert sum(line["attempts"] for line in delivered) == len(hooks.requests)
    assert gw.lines("push relay circuit closed")[0]["destination"] == hooks.base
    assert not gw.lines("push relay delivery failed")


async def test_dead_letters_on_the_admin_listener(tmp_path: Path) -> None:
    hooks = Receiver(down=True)
    with gateway(tmp_path, retries=0, admin=True) as (gw, _):
        base = f"{gw.admin}/_admin/relay/dead-letters"
        async with hooks.up(), aiohttp.ClientSession() as http:
            await notify_all(gw, hooks, tasks=2, each=1)
            await wait_until(lambda: len(gw.lines("push relay delivery failed")) >= 2,
                             "two dead letters")

            async def call(method: str, path: str = "", tenant: str | None = "t",
                           ) -> tuple[int, Any]:
                params = {} if tenant is None else {"tenant": tenant}
                async with http.request(method, base + path, params=params) as resp:
                    return resp.status, await resp.json()

            status, listed = await call("GET")
            assert status == 200 and listed["tenant"] == "t"
            letters = {d["task_id"]: d for d in listed["dead_letters"]}
            assert set(letters) == {"k0", "k1"}
            k0, k1 = letters["k0"]["webhook_id"], letters["k1"]["webhook_id"]
            assert letters["k0"]["attempts"] == 1 and letters["k0"]["last_status"] == 503
            assert letters["k0"]["webhook"] == f"127.0.0.1:{hooks.port}"
            assert k0 in gw.cli("list").stdout  # the CLI tells the same story

            status, shown = await call("GET", f"/{k0}")
            assert status == 200 and shown["body"]["task"]["metadata"] == {"n": 0}
            assert shown["webhook_id"] == k0 and shown["last_error"] == "HTTP 503"

            # A form a page of another site posts (no preflight): refused, nothing queued.
            async with http.post(base + f"/{k0}/replay", params={"tenant": "t"},
                                 data={"x": "1"},
                                 headers={"Origin": "https://evil.example"}) as resp:
                assert resp.status == 403 and "another site" in (await resp.json())["error"]
            assert k0 in {d["webhook_id"] for d in (await call("GET"))[1]["dead_letters"]}

            hooks.down = False
            status, replayed = await call("POST", f"/{k0}/replay")
            assert (status, replayed["outcome"]) == (200, "queued again")
            await wait_until(lambda: hooks.delivered.get("/p0"), "the replayed delivery")
            assert hooks.delivered["/p0"] == [(k0, 0)]  # the same webhook-id

            assert await call("DELETE", f"/{k1}") == (
                200, {"tenant": "t", "webhook_id": k1, "outcome": "dropped"})
            assert (await call("GET"))[1]["dead_letters"] == []
            status, missing = await call("POST", f"/{k1}/replay")
            assert status == 404 and f"no dead letter {k1!r}" in missing["error"]
            assert (await call("GET", f"/{k1}"))[0] == 404
            status, refused = await call("GET", tenant=None)
            assert status == 400 and "tenant" in refused["error"]
            async with http.get(base, params={"tenant": "t", "limit": "x"}) as resp:
                assert resp.status == 400
