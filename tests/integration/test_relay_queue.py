"""The push relay's durable queue (docs/push-relay.md, "Delivery guarantees"), with real
gateway processes on a SQLite store and a real webhook receiver (aiohttp) on 127.0.0.1.
The test posts the notifications itself, as an agent would (the SDK agents' own pushes
run through the same endpoint in tests/interop/test_push_relay_interop.py): that way it
knows their order and decides when the receiver is up.

- the receiver is down, then up: every notification arrives, in order, ids unique;
- the gateway is SIGKILLed with 50 deliveries queued, and started again: all arrive;
- a 4xx is not retried; a 5xx is, until the attempts run out: a dead letter, which
  `a2a-gateway relay list|show|replay|drop` handle; a 429's Retry-After is honoured.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from gateway.relay.seals import Sealer, decode_key
from tests.support.helpers import VENV_BIN, free_port, gateway_cmd, running, write_config
from tests.support.waiting import wait_until
from translators.webhooks import RelayTarget

KEY = base64.urlsafe_b64encode(os.urandom(32)).decode()
# Short schedule: tests wait for conditions, never for a real backoff.
FAST = {"keys": [KEY], "webhook_allowlist": ["127.0.0.1"], "timeout": 1,
        "backoff": 0.05, "queue": {"max_backoff": 0.3, "lease": 2, "poll": 0.1}}


@dataclass
class Receiver:
    """Records (path, webhook-id, body) of each POST; answers what ``answers`` says for
    its path (a list of statuses, used up in order; 200 after), Retry-After 1 on 429."""

    port: int = field(default_factory=free_port)
    got: list[tuple[str, str, Any]] = field(default_factory=list)
    answers: dict[str, list[int]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def on(self, path: str) -> list[tuple[str, Any]]:
        return [(wid, body) for p, wid, body in self.got if p == path]

    async def hook(self, request: web.Request) -> web.Response:
        self.got.append((request.path, request.headers.get("webhook-id", ""),
                         await request.json()))
        left = self.answers.get(request.path) or [200]
        status = left.pop(0) if len(left) > 1 or left[0] != 200 else 200
        if not left:
            self.answers.pop(request.path, None)
        headers = {"Retry-After": "1"} if status == 429 else {}
        return web.json_response({}, status=status, headers=headers)

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


@dataclass
class Gateway:
    url: str
    config: Path
    log: Path

    def lines(self, event: str) -> list[dict[str, Any]]:
        lines = [json.loads(raw) for raw in self.log.read_text().splitlines()
                 if raw.startswith("{")]
        return [line for line in lines if line.get("event") == event]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV_BIN / "a2a-gateway"), "relay", *args, "--config",
                               str(self.config), "--tenant", "t"], capture_output=True,
                              text=True, timeout=60, env=os.environ)


@contextmanager
def gateway(stack: ExitStack, tmp_path: Path, name: str = "gw",
            **relay: Any) -> Iterator[tuple[Gateway, subprocess.Popen[bytes]]]:
    port = free_port()
    config = write_config(tmp_path / f"{name}.yaml", {
        "listen": {"http": f"127.0.0.1:{port}"},
        # The agent is never asked: v1.0 clients get the notification's own body.
        "tenants": {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}},
        "push_relay": {**FAST, **relay}})
    log = tmp_path / f"{name}.log"
    with running(gateway_cmd(config), port, log=log) as proc:
        yield Gateway(f"http://127.0.0.1:{port}", config, log), proc


def sealed_for(url: str, task_id: str) -> str:
    """The relay URL's seal a client's push config for ``url`` would have got."""
    target = RelayTarget(url=url, client_version="1.0", backend_version="0.3", tenant="t",
                         relay_token="relay-tok", issued_at=int(time.time()), token="tok",
                         authentication=None, config_id="c1", task_id=task_id)
    return Sealer([decode_key(KEY)], 0).seal(target)


async def notify(http: aiohttp.ClientSession, gw: Gateway, sealed: str, task_id: str,
                 n: int, state: str = "working") -> None:
    """What a v0.3 agent posts: the task, numbered in its metadata."""
    body = {"kind": "task", "id": task_id, "contextId": "ctx", "status": {"state": state},
            "metadata": {"n": n}}
    async with http.post(f"{gw.url}/_relay/{sealed}", json=body,
                         headers={"X-A2A-Notification-Token": "relay-tok"}) as resp:
        assert resp.status == 202, await resp.text()


def numbers(got: list[tuple[str, Any]]) -> list[int]:
    return [body["task"]["metadata"]["n"] for _, body in got]


def assert_once_each_in_order(got: list[tuple[str, Any]], count: int) -> None:
    assert numbers(got) == list(range(count))
    ids = [wid for wid, _ in got]
    assert all(wid.startswith("msg_") for wid in ids) and len(set(ids)) == count


async def test_receiver_down_then_up_gets_every_notification_in_order(
        tmp_path: Path) -> None:
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/down", "t1")
    with ExitStack() as stack, gateway(stack, tmp_path, retries=30) as (gw, _):
        async with aiohttp.ClientSession() as http:
            for n in range(20):
                await notify(http, gw, sealed, "t1", n)
            # The first delivery fails (nothing listens) and is rescheduled.
            await wait_until(lambda: gw.lines("push relay delivery will be retried"),
                             "a retry scheduled")
            async with hooks.up():
                await wait_until(lambda: len(hooks.on("/down")) >= 20, "20 deliveries")
    assert_once_each_in_order(hooks.on("/down"), 20)
    retried = gw.lines("push relay delivery will be retried")[0]
    assert retried["attempts"] == 1 and retried["task_id"] == "t1"
    assert "ClientConnectorError" in retried["error"]


async def test_deliveries_queued_survive_a_sigkill(tmp_path: Path) -> None:
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/kill", "t2")
    with ExitStack() as stack:
        with gateway(stack, tmp_path, retries=30) as (gw, proc):
            async with aiohttp.ClientSession() as http:
                for n in range(50):  # each answered 202: stored
                    await notify(http, gw, sealed, "t2", n)
            proc.kill()
            proc.wait()
        assert not hooks.got
        with gateway(stack, tmp_path, retries=30) as (again, _):
            async with hooks.up():
                await wait_until(lambda: len(hooks.on("/kill")) >= 50, "50 deliveries",
                                 timeout=30)
    assert_once_each_in_order(hooks.on("/kill"), 50)
    assert again.lines("push relay delivered")


async def test_4xx_is_not_retried_5xx_is_then_dead_letter_and_replay(tmp_path: Path) -> None:
    hooks = Receiver()
    hooks.answers = {"/gone": [400], "/flaky": [503, 503, 503], "/busy": [429]}
    # Room for the receiver's Retry-After (the schedule caps it at max_backoff).
    queue = {**FAST["queue"], "max_backoff": 5}  # type: ignore[dict-item]
    with ExitStack() as stack, gateway(stack, tmp_path, retries=2, queue=queue) as (gw, _):
        async with hooks.up(), aiohttp.ClientSession() as http:
            for path in ("gone", "flaky", "busy"):
                await notify(http, gw, sealed_for(f"{hooks.base}/{path}", path), path, 0)
            await wait_until(lambda: len(gw.lines("push relay delivery failed")) >= 2,
                             "two dead letters")
            await wait_until(lambda: hooks.on("/busy")[1:], "the 429 tried again")
            failed = {line["task_id"]: line for line in gw.lines("push relay delivery failed")}
            assert failed["gone"]["attempts"] == 1 and failed["gone"]["status"] == 400
            assert failed["flaky"]["attempts"] == 3 and failed["flaky"]["status"] == 503
            assert len(hooks.on("/gone")) == 1 and len(hooks.on("/flaky")) == 3
            assert len({wid for wid, _ in hooks.on("/flaky")}) == 1  # one id, every attempt
            # Retry-After: 1 is the delay asked for, without jitter.
            busy = next(line for line in gw.lines("push relay delivery will be retried")
                        if line["task_id"] == "busy")
            assert busy["retry_in"] == 1.0 and busy["error"] == "HTTP 429"

            listed = gw.cli("list")
            assert listed.returncode == 0, listed.stderr
            flaky_id = hooks.on("/flaky")[0][0]
            gone_id = hooks.on("/gone")[0][0]
            assert flaky_id in listed.stdout and gone_id in listed.stdout
            assert "status 503" in listed.stdout and "attempts 3" in listed.stdout
            shown = json.loads(gw.cli("show", flaky_id).stdout)
            assert shown["body"]["task"]["metadata"] == {"n": 0}
            assert shown["attempts"] == 3 and shown["last_status"] == 503
            assert shown["webhook"] == f"127.0.0.1:{hooks.port}"

            replayed = gw.cli("replay", flaky_id)  # the receiver answers 200 now
            assert replayed.returncode == 0 and "queued again" in replayed.stdout
            await wait_until(lambda: len(hooks.on("/flaky")) == 4, "the replayed delivery")
            assert hooks.on("/flaky")[3][0] == flaky_id  # the same webhook-id
            assert gw.cli("drop", gone_id).returncode == 0
            assert gw.cli("list").stdout == ""
            missing = gw.cli("replay", gone_id)
            assert missing.returncode == 1 and "no dead letter" in missing.stderr
