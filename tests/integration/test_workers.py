"""`workers: 2` (README "Workers"): a real `a2a-gateway serve` supervisor and its two
worker processes on 127.0.0.1. Both serve the same HTTP and gRPC ports, `/metrics` on
either adds up both, SIGHUP reloads both, a killed worker is replaced, SIGTERM drains
both, and a relay URL one worker sealed opens on the other (one generated key, one store).

Which worker takes a connection is the kernel's choice (SO_REUSEPORT hashes the
connection's addresses), so each test makes many calls, each on a new connection: the
chance that 16 of them all land on the same one of two workers is 2**-15.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import yaml
from a2a.types import a2a_pb2 as pb
from aiohttp import web

from tests.support.helpers import (
    free_port,
    gateway_cmd,
    serving,
    stop_process,
    wait_for_port,
    write_config,
)
from tests.support.waiting import wait_until, wait_until_sync

Line = dict[str, Any]
V10 = {"A2A-Version": "1.0"}
SPREAD = 16  # calls, each on a new connection, so that both workers take some


class Workers:
    """A supervisor with two workers, its config file and its log (JSON lines)."""

    def __init__(self, tmp_path: Path, tenants: dict[str, Any] | None = None,
                 **extra: Any) -> None:
        self.port, self.grpc_port, self.demo_port = free_port(), free_port(), free_port()
        demo = f"http://127.0.0.1:{self.demo_port}/"
        self.config_path = write_config(tmp_path / "gw.yaml", {
            "listen": {"http": f"127.0.0.1:{self.port}",
                       "grpc": f"127.0.0.1:{self.grpc_port}"},
            "demo_agent": {"listen": f"127.0.0.1:{self.demo_port}"},
            "tenants": tenants or {"demo": {"backend": {"url": demo, "version": "0.3"}}},
            "workers": 2, "reload_interval": 0, "shutdown_grace": 3, **extra})
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "gw.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(gateway_cmd(self.config_path), stdout=self._log,
                                     stderr=subprocess.STDOUT)
        self.wait_for(lambda line: line.get("event") == "workers ready")

    def lines(self) -> list[Line]:
        return [json.loads(raw) for raw in self.log_path.read_text().splitlines()
                if raw.startswith("{")]

    def wait_for(self, match: Callable[[Line], bool], timeout: float = 30) -> Line:
        def found() -> Line | None:
            lines = [line for line in self.lines() if match(line)]
            if not lines and self.proc.poll() is not None:
                raise AssertionError(f"the gateway exited; the log:\n{self.log()}")
            return lines[-1] if lines else None

        try:
            return wait_until_sync(found, "such a log line", timeout=timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the log:\n{self.log()}") from None

    def log(self) -> str:
        return self.log_path.read_text()[-3000:]

    def pids(self) -> dict[int, int]:
        """Worker index → pid of the worker that is ready now."""
        return {line["worker"]: line["pid"] for line in self.lines()
                if line.get("event") == "worker ready"}

    def calls(self) -> Counter[tuple[int, str]]:
        """Calls logged, by (worker, client binding)."""
        return Counter((line["worker"], line["client_binding"]) for line in self.lines()
                       if line.get("event") == "call")

    def stop(self) -> int:
        code = stop_process(self.proc)
        self._log.close()
        return code


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    gateway = Workers(tmp_path)
    yield gateway
    gateway.stop()


def j03(text: str) -> dict[str, Any]:
    return {"message": {"kind": "message", "messageId": f"m-{text}", "role": "user",
                        "parts": [{"kind": "text", "text": text}]}}


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                    "params": params}, headers=headers) as resp:
        reply: dict[str, Any] = await resp.json()
        return reply


async def each_on_a_new_connection(url: str, texts: list[str]) -> list[str]:
    """message/send with each text, concurrently, each on its own connection; the texts
    the agent answered (or the error)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        replies = await asyncio.gather(*(rpc(http, url, "message/send", j03(t))
                                         for t in texts))
    return [r["result"]["parts"][0]["text"] if "result" in r else str(r) for r in replies]


async def metrics_text(base: str) -> str:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http, \
            http.get(base + "/metrics") as resp:
        return await resp.text()


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")) and \
                all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def sent_ok(text: str, binding: str) -> float:
    return metric(text, "a2a_gateway_calls_total", tenant="demo", operation="SendMessage",
                  client_binding=binding, outcome="ok")


async def grpc_send(port: int, text: str) -> str:
    request = pb.SendMessageRequest(message=pb.Message(
        message_id=f"g-{text}", role=pb.ROLE_USER, parts=[pb.Part(text=text)]))
    # A subchannel of its own: gRPC would otherwise share one connection among channels.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.use_local_subchannel_pool", 1)]) as channel:
        raw = await channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")(
            request.SerializeToString(), metadata=(("a2a-version", "1.0"),), timeout=10)
    return str(pb.SendMessageResponse.FromString(raw).message.parts[0].text)


async def test_both_workers_serve_both_ports_and_metrics_add_up(workers: Workers) -> None:
    pids = workers.pids()
    assert sorted(pids) == [0, 1] and len(set(pids.values())) == 2
    texts = [f"n{i}" for i in range(SPREAD + 8)]
    assert await each_on_a_new_connection(workers.base + "/", texts) == \
        [f"echo: {t}" for t in texts]
    answers = await asyncio.gather(*(grpc_send(workers.grpc_port, f"g{i}")
                                     for i in range(SPREAD)))
    assert answers == [f"echo: g{i}" for i in range(SPREAD)]
    # Each worker logs a call after answering it.
    calls = await wait_until(lambda: (c := workers.calls()).total() == len(texts) + SPREAD
                             and c, "every call's log line")
    for worker in (0, 1):
        assert calls[(worker, "JSONRPC")] > 0 and calls[(worker, "GRPC")] > 0, calls
    assert calls[(0, "JSONRPC")] + calls[(1, "JSONRPC")] == len(texts)
    # Whichever worker answers /metrics, it counts every worker's calls: another worker's
    # show once it has added them (within its flush bound), and then on every scrape.
    async def all_counted() -> str | None:
        text = await metrics_text(workers.base)
        return text if (sent_ok(text, "JSONRPC"), sent_ok(text, "GRPC")) == \
            (len(texts), SPREAD) else None

    await wait_until(all_counted, "every worker's calls in /metrics", timeout=5)
    for _ in range(6):
        text = await metrics_text(workers.base)
        assert sent_ok(text, "JSONRPC") == len(texts)
        assert sent_ok(text, "GRPC") == SPREAD
    assert metric(text, "a2a_gateway_call_duration_seconds_count",
                  operation="SendMessage") == len(texts) + SPREAD


async def test_sighup_reloads_every_worker(workers: Workers) -> None:
    again = await each_on_a_new_connection(workers.base + "/again", ["before"])
    assert "TENANT_NOT_FOUND" in again[0] or "-32602" in again[0], again
    data = yaml.safe_load(workers.config_path.read_text())
    data["tenants"]["again"] = data["tenants"]["demo"]
    workers.config_path.write_text(yaml.safe_dump(data))
    workers.proc.send_signal(signal.SIGHUP)
    for worker in (0, 1):
        workers.wait_for(lambda line, w=worker: line.get("event") == "config reloaded"
                         and line.get("worker") == w and line.get("reason") == "SIGHUP")
    texts = [f"r{i}" for i in range(SPREAD + 4)]
    assert await each_on_a_new_connection(workers.base + "/again", texts) == \
        [f"echo: {t}" for t in texts]


async def test_a_killed_worker_is_replaced_and_the_counts_survive(workers: Workers) -> None:
    first = [f"a{i}" for i in range(SPREAD)]
    assert await each_on_a_new_connection(workers.base + "/", first) == \
        [f"echo: {t}" for t in first]
    # Idle connections held open on both workers when one of them dies.
    held = [socket.create_connection(("127.0.0.1", workers.port)) for _ in range(SPREAD)]
    try:
        async def all_open() -> bool:
            text = await metrics_text(workers.base)
            return metric(text, "a2a_gateway_open_connections") >= SPREAD + 1

        await wait_until(all_open, "the held connections open on the workers")

        async def first_counted() -> bool:  # the victim has added its share of them
            return sent_ok(await metrics_text(workers.base), "JSONRPC") == SPREAD

        await wait_until(first_counted, "the first calls in /metrics", timeout=5)
        victim = workers.pids()[1]
        os.kill(victim, signal.SIGKILL)
        died = workers.wait_for(lambda line: line.get("event") == "worker exited; starting "
                                "another" and line.get("pid") == victim)
        assert died["worker"] == 1 and died["code"] == -signal.SIGKILL
        workers.wait_for(lambda line: line.get("event") == "worker ready"
                         and line.get("worker") == 1 and line.get("pid") != victim)
        assert workers.pids()[0] != workers.pids()[1] != victim
        second = [f"b{i}" for i in range(SPREAD)]
        assert await each_on_a_new_connection(workers.base + "/", second) == \
            [f"echo: {t}" for t in second]
        # The dead worker's counts stay in the total; its live gauges do not: what is
        # open now is worker 0's share of the held connections, and this scrape.
        survivors = [c for c in held if _still_open(c)]
        assert 0 < len(survivors) < SPREAD
        # The second calls' connections, closed by the client, count until each worker
        # has read their end (a worker may answer the scrape before the other has): the
        # dead worker's gauges never would. Its counts are in the total once the other
        # worker has added its share of the second calls (within its flush bound).
        async def settled() -> str | None:
            text = await metrics_text(workers.base)
            return text if metric(text, "a2a_gateway_open_connections") == \
                len(survivors) + 1 and sent_ok(text, "JSONRPC") == 2 * SPREAD else None

        await wait_until(settled, "open connections: the survivors and the scrape; "
                         "every call counted", timeout=5)
    finally:
        for conn in held:
            conn.close()


def _still_open(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True  # nothing to read, not closed
    except OSError:
        return False


async def test_sigterm_drains_every_worker_and_exits_0(tmp_path: Path) -> None:
    arrived: list[str] = []

    async def slow(request: web.Request) -> web.Response:
        body = await request.json()
        text = body["params"]["message"]["parts"][0]["text"]
        arrived.append(text)
        await asyncio.sleep(1.0)
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {
            "kind": "message", "messageId": f"a-{text}", "role": "agent",
            "parts": [{"kind": "text", "text": f"slow {text}"}]}})

    app = web.Application()
    app.router.add_post("/", slow)
    async with serving(app) as backend:
        gateway = Workers(tmp_path, {"demo": {"backend": {"url": backend + "/",
                                                          "version": "0.3"}}})
        try:
            texts = [f"s{i}" for i in range(SPREAD)]
            calls = asyncio.create_task(each_on_a_new_connection(gateway.base + "/", texts))
            await wait_until(lambda: len(arrived) == len(texts),  # all at the backend
                             "every call in flight at the backend")
            started = time.monotonic()
            gateway.proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(calls, 10) == [f"slow {t}" for t in texts]
            code = await asyncio.get_running_loop().run_in_executor(
                None, gateway.proc.wait, 15)
            took = time.monotonic() - started
        finally:
            gateway.stop()
    assert code == 0 and took < 3 + 2
    lines = gateway.lines()
    assert {line["worker"] for line in lines if line.get("event") == "call"} == {0, 1}
    assert {line.get("worker") for line in lines if line.get("event") == "stopped"} == \
        {0, 1, None}  # both workers, then the supervisor
    assert next(line for line in lines if line.get("event") == "stopped"
                and "worker" not in line)["exit_code"] == 0
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", gateway.port), 0.5):
        pass


async def test_a_relay_url_sealed_by_one_worker_opens_on_the_other(tmp_path: Path) -> None:
    """No relay key configured: the supervisor's generated key is every worker's. The
    notifications, each on a new connection, land on both workers; the replay marks are
    in the shared state store, so a repeated notification is delivered once."""
    received: list[Any] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/hook", hook)
    async with serving(app) as receiver:
        gateway = Workers(tmp_path, push_relay={"webhook_allowlist": ["127.0.0.1"]})
        try:
            await _relay_across_workers(gateway, receiver, received)
        finally:
            gateway.stop()


async def _relay_across_workers(gateway: Workers, receiver: str, received: list[Any]) -> None:
    demo = f"http://127.0.0.1:{gateway.demo_port}/"
    async with aiohttp.ClientSession() as http:
        task = (await rpc(http, gateway.base + "/", "SendMessage", {"message": {
            "messageId": "m-trip", "role": "ROLE_USER", "parts": [{"text": "input: trip"}]}},
                          V10))["result"]["task"]
        cfg = {"taskId": task["id"], "id": "c1", "url": f"{receiver}/hook", "token": "tok"}
        assert (await rpc(http, gateway.base + "/", "CreateTaskPushNotificationConfig", cfg,
                          V10))["result"] == cfg
        held = (await rpc(http, demo, "tasks/pushNotificationConfig/get", {
            "id": task["id"], "pushNotificationConfigId": "c1"}))["result"]
    relay_url, relay_token = held["pushNotificationConfig"]["url"], \
        held["pushNotificationConfig"]["token"]
    assert relay_url.startswith(gateway.base + "/_relay/")
    before = await metrics_text(gateway.base)

    def note(stamp: str) -> dict[str, Any]:  # what a v0.3 agent posts
        return {"kind": "task", "id": task["id"], "contextId": task["contextId"],
                "status": {"state": "working", "timestamp": stamp}}

    distinct = [note(f"2026-01-01T00:00:{i:02d}Z") for i in range(SPREAD)]
    repeated = [note("2026-01-01T00:01:00Z")] * SPREAD
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        for body in distinct + repeated:
            async with http.post(relay_url, json=body,
                                 headers={"X-A2A-Notification-Token": relay_token}) as resp:
                assert resp.status == 202, await resp.text()
    after = await metrics_text(gateway.base)

    def delta(outcome: str) -> float:
        return metric(after, "a2a_gateway_push_deliveries_total", outcome=outcome) - \
            metric(before, "a2a_gateway_push_deliveries_total", outcome=outcome)

    assert (delta("accepted"), delta("duplicate")) == (SPREAD + 1, SPREAD - 1)

    def dropped() -> set[int]:  # each worker's lines come within its log flush bound
        return {line["worker"] for line in gateway.lines()
                if line.get("event") == "push relay dropped a repeated notification"}

    # Both workers knew the first one had been taken.
    await wait_until(lambda: dropped() == {0, 1}, "both workers' repeated-notification lines")
    assert not [line for line in gateway.lines() if "refused" in line.get("event", "")]
    stamps = [f"2026-01-01T00:00:{i:02d}Z" for i in range(SPREAD)] + ["2026-01-01T00:01:00Z"]
    await wait_until(lambda: len(_delivered(received, stamps)) >= len(stamps),
                     "every notification delivered")
    await asyncio.sleep(0.2)  # a quiet period: no second copy of any arrives
    assert sorted(_delivered(received, stamps)) == sorted(stamps)  # each exactly once


def _delivered(received: list[Any], stamps: list[str]) -> list[str]:
    return [body["task"]["status"]["timestamp"] for body in received
            if body.get("task", {}).get("status", {}).get("timestamp") in stamps]


def test_workers_stop_when_their_supervisor_is_killed(workers: Workers) -> None:
    """No orphan keeps a share of the port: each worker follows its supervisor out."""
    pids = list(workers.pids().values())
    workers.proc.kill()
    wait_until_sync(lambda: not any(_alive(pid) for pid in pids), "every worker gone")
    assert {line.get("worker") for line in workers.lines()
            if line.get("event") == "stopped"} == {0, 1}  # drained, not killed
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", workers.port), 0.5):
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose (its parent, now init, reaps it).
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_port_another_process_holds_is_refused(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        path = write_config(tmp_path / "gw.yaml", {
            "listen": {"http": f"127.0.0.1:{port}"}, "workers": 2,
            "tenants": {"d": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}}})
        done = subprocess.run(gateway_cmd(path), capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done
    assert f"listen.http: cannot bind 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr and "worker started" not in done.stderr


def test_a_worker_that_cannot_start_stops_the_gateway(tmp_path: Path) -> None:
    """Worker 0 runs the demo agent; its port is taken, so worker 0 fails to start, and
    the supervisor stops worker 1 and exits non-zero instead of restarting forever."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        demo = held.getsockname()[1]
        port = free_port()
        path = write_config(tmp_path / "gw.yaml", {
            "listen": {"http": f"127.0.0.1:{port}"}, "workers": 2,
            "demo_agent": {"listen": f"127.0.0.1:{demo}"},
            "tenants": {"d": {"backend": {"url": f"http://127.0.0.1:{demo}/",
                                          "version": "0.3"}}}})
        done = subprocess.run(gateway_cmd(path), capture_output=True, text=True, timeout=60)
    lines = [json.loads(raw) for raw in done.stderr.splitlines() if raw.startswith("{")]
    failed = next(line for line in lines
                  if line.get("event") == "worker could not start; stopping the gateway")
    assert failed["worker"] == 0 and done.returncode == failed["code"] != 0
    started = [line["pid"] for line in lines if line.get("event") == "worker started"]
    assert len(started) == 2  # not restarted
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(OSError):
        wait_for_port(port, 0.3)
