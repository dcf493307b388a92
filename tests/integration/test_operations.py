"""Running it in production (issue 7): logs, metrics, readiness, reload, shutdown.

The gateway runs as a real `a2a-gateway serve` process (signals, stderr log lines,
exit code), with the built-in demo agent in front of it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.support.helpers import free_port, gateway_cmd, stop_process, wait_for_port, write_config
from tests.support.waiting import wait_until


class Proc:
    def __init__(self, config_path: Path, log_path: Path, port: int) -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.base = f"http://127.0.0.1:{port}"
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(gateway_cmd(config_path), stdout=self._log,
                                     stderr=subprocess.STDOUT)
        wait_for_port(port, 30, self.proc)

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log_path.read_text().splitlines():
            if raw.startswith("{"):
                out.append(json.loads(raw))
        return out

    def stop(self) -> int:
        code = stop_process(self.proc)
        self._log.close()
        return code


def base_config(port: int, demo_port: int, **extra: Any) -> dict[str, Any]:
    return {"listen": {"http": f"127.0.0.1:{port}"},
            "demo_agent": {"listen": f"127.0.0.1:{demo_port}"},
            # Translated calls (their losses and log lines) are what these tests read; a
            # same-dialect call passes through (tests/integration/test_pass_through.py).
            "tenants": {"demo": {"backend": {"url": f"http://127.0.0.1:{demo_port}/",
                                             "version": "0.3", "pass_through": False}}},
            "reload_interval": 0.2, "shutdown_grace": 3, **extra}


@pytest.fixture
def gateway_proc(tmp_path: Path) -> Iterator[Proc]:
    port = free_port()
    config = write_config(tmp_path / "gw.yaml", base_config(port, free_port()))
    proc = Proc(config, tmp_path / "gw.log", port)
    yield proc
    proc.stop()


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                    "params": params}, headers=headers) as resp:
        return await resp.json()  # type: ignore[no-any-return]


def j03(text: str) -> dict[str, Any]:
    return {"message": {"kind": "message", "messageId": "m", "role": "user",
                        "parts": [{"kind": "text", "text": text}]}}


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        named = line.startswith((name + "{", name + " "))
        if named and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_log_lines_and_metrics_after_real_calls(gateway_proc: Proc) -> None:
    base = gateway_proc.base
    async with aiohttp.ClientSession() as http:
        ok = await rpc(http, base + "/", "message/send", j03("hi"), {"X-Request-ID": "req-1"})
        assert ok["result"]["parts"][0]["text"] == "echo: hi"
        async with http.get(base + "/tasks/nope", headers={"A2A-Version": "1.0"}) as resp:
            assert resp.status == 404
        lossy = await rpc(http, base + "/", "tasks/get",
                          {"id": "nope", "metadata": {"secret": "do-not-log"}})
        assert lossy["error"]["code"] == -32001
        # A tenant the client made up is no label value (unbounded series otherwise).
        stray = await rpc(http, base + "/made-up-tenant", "tasks/get", {"id": "x"})
        assert stray["error"]["code"] == -32602
        async with http.get(base + "/metrics") as resp:
            text = await resp.text()
    def logged() -> dict[str, Any] | None:  # a call's line is written after its answer
        calls = {line["request_id"]: line for line in gateway_proc.lines()
                 if line.get("event") == "call"}
        kinds = {(c["client_binding"], bool(c.get("dropped"))) for c in calls.values()}
        return calls if "req-1" in calls and {("HTTP+JSON", False), ("JSONRPC", True)} <= kinds \
            else None

    calls = await wait_until(logged, "the calls' log lines")
    first = calls["req-1"]
    assert first | {"duration_ms": 0} == first | {
        "tenant": "demo", "operation": "SendMessage", "client_version": "0.3",
        "client_binding": "JSONRPC", "backend_version": "0.3", "backend_binding": "JSONRPC",
        "outcome": "ok", "duration_ms": 0}
    assert first["duration_ms"] > 0
    rest = next(c for c in calls.values() if c["client_binding"] == "HTTP+JSON")
    assert (rest["operation"], rest["client_version"], rest["outcome"]) == \
        ("GetTask", "1.0", "TASK_NOT_FOUND")
    lossy_line = next(c for c in calls.values() if c.get("dropped"))
    assert lossy_line["dropped"] == ["params.metadata"]
    assert "do-not-log" not in gateway_proc.log_path.read_text()
    assert metric(text, "a2a_gateway_calls_total", tenant="demo", operation="SendMessage",
                  client_version="0.3", client_binding="JSONRPC", outcome="ok") == 1
    assert metric(text, "a2a_gateway_calls_total", operation="GetTask",
                  client_binding="HTTP+JSON", outcome="TASK_NOT_FOUND") == 1
    assert metric(text, "a2a_gateway_calls_total", tenant="none",
                  outcome="TENANT_NOT_FOUND") == 1
    assert "made-up-tenant" not in text
    assert metric(text, "a2a_gateway_translation_losses_total", field="params.metadata",
                  direction="request") == 1
    assert metric(text, "a2a_gateway_backend_errors_total", tenant="demo",
                  kind="TASK_NOT_FOUND") == 2
    assert metric(text, "a2a_gateway_backend_duration_seconds_count",
                  operation="SendMessage") == 1
    assert metric(text, "a2a_gateway_added_seconds_count", operation="SendMessage") == 1


async def test_readyz(gateway_proc: Proc, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway_proc.base + "/readyz") as resp:
            assert resp.status == 200
            body = await resp.json()
        assert body["status"] == "ready" and body["tenants"]["demo"]["ready"] is True
        port = free_port()
        config = base_config(port, free_port())
        config["tenants"]["down"] = {"backend": {"url": f"http://127.0.0.1:{free_port()}/",
                                                 "version": "1.0"}}
        other = Proc(write_config(tmp_path / "b.yaml", config), tmp_path / "b.log", port)
        try:
            async with http.get(other.base + "/readyz") as resp:
                assert resp.status == 503
                body = await resp.json()
        finally:
            other.stop()
        assert body["tenants"]["demo"]["ready"] is True
        assert body["tenants"]["down"]["ready"] is False


async def _subscribe(http: aiohttp.ClientSession, base: str, task_id: str,
                     events: list[dict[str, Any]]) -> None:
    body = {"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": task_id}}
    async with http.post(base + "/", json=body, headers={"A2A-Version": "1.0"}) as resp:
        async for line in resp.content:
            if line.startswith(b"data:"):
                events.append(json.loads(line[5:]))


async def _slow_task(http: aiohttp.ClientSession, base: str) -> str:
    reply = await rpc(http, base + "/", "message/send",
                      {**j03("slow"), "configuration": {"blocking": False}})
    return str(reply["result"]["id"])


async def test_reload_valid_invalid_and_streams_survive(gateway_proc: Proc) -> None:
    base = gateway_proc.base
    current = gateway_proc.config_path.read_text()
    async with aiohttp.ClientSession() as http:
        task_id = await _slow_task(http, base)
        events: list[dict[str, Any]] = []
        stream = asyncio.create_task(_subscribe(http, base, task_id, events))
        await wait_until(lambda: events, "the subscription's first event")
        # A valid change: a second tenant name for the same agent.
        data = yaml.safe_load(current)
        data["tenants"]["again"] = data["tenants"]["demo"]
        data["default_tenant"] = "demo"
        gateway_proc.config_path.write_text(yaml.safe_dump(data))
        async def served() -> dict[str, Any] | None:
            reply = await rpc(http, base + "/again", "message/send", j03("x"))
            return reply if "result" in reply else None

        reply = await wait_until(served, "the new tenant served after the reload")
        assert reply["result"]["parts"][0]["text"] == "echo: x"
        # An invalid change is refused; the previous config keeps serving.
        gateway_proc.config_path.write_text("tenants: {again: {backend: {version: '7'}}}\n")
        gateway_proc.proc.send_signal(signal.SIGHUP)
        refused = await wait_until(lambda: [line for line in gateway_proc.lines()
                                            if "refused" in line.get("event", "")],
                                   "the reload refused")
        assert "result" in await rpc(http, base + "/again", "message/send", j03("y"))
        assert "tenants.again.backend" in refused[0]["error"]
        # The stream opened before both reloads is still alive and ends normally.
        assert not stream.done()
        cancel = await rpc(http, base + "/", "tasks/cancel", {"id": task_id})
        assert cancel["result"]["status"]["state"] == "canceled"
        await asyncio.wait_for(stream, 10)
    states = [e["result"].get("statusUpdate", {}).get("status", {}).get("state")
              for e in events]
    assert "task" in events[0]["result"] and states[-1] == "TASK_STATE_CANCELED"


async def test_sigterm_closes_open_streams_cleanly_and_exits_0(gateway_proc: Proc) -> None:
    base = gateway_proc.base
    async with aiohttp.ClientSession() as http:
        task_id = await _slow_task(http, base)
        events: list[dict[str, Any]] = []
        stream = asyncio.create_task(_subscribe(http, base, task_id, events))
        await wait_until(lambda: events, "the subscription's first event")
        started = time.monotonic()
        gateway_proc.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(stream, 5)  # ends without a connection error
        assert stream.exception() is None
        assert "task" in events[0]["result"]
    code = await asyncio.get_running_loop().run_in_executor(None, gateway_proc.proc.wait, 10)
    assert code == 0
    assert time.monotonic() - started < 3 + 2
    assert any(line.get("event") == "stopped" for line in gateway_proc.lines())
