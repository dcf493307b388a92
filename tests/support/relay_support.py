"""What the relay queue's process tests share (tests/integration/test_relay_queue.py,
tests/state/test_relay_replicas.py): a webhook receiver that can be down, fail, or ask
for a delay; gateway processes with a short retry schedule; the seals and notifications
an agent would post."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from gateway.relay.seals import Sealer, decode_key
from tests.support.helpers import (
    VENV_BIN,
    free_port,
    gateway_cmd,
    running,
    wait_for_port,
    write_config,
)
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
    admin: str = ""  # the admin listener's URL, when it has one

    def lines(self, event: str) -> list[dict[str, Any]]:
        lines = [json.loads(raw) for raw in self.log.read_text().splitlines()
                 if raw.startswith("{")]
        return [line for line in lines if line.get("event") == event]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV_BIN / "a2a-gateway"), "relay", *args, "--config",
                               str(self.config), "--tenant", "t"], capture_output=True,
                              text=True, timeout=60, env=os.environ)


@contextmanager
def gateway(tmp_path: Path, name: str = "gw", state: dict[str, Any] | None = None,
            admin: bool = False, tenant: dict[str, Any] | None = None,
            env: dict[str, str] | None = None, **relay: Any,
            ) -> Iterator[tuple[Gateway, subprocess.Popen[bytes]]]:
    """A gateway process (tenant `t`, with ``tenant``'s settings added) with the FAST
    schedule and ``relay`` settings; on its own SQLite file unless ``state`` says
    otherwise; ``admin``: with an admin listener."""
    port = free_port()
    admin_port = free_port()
    admin_at = f"127.0.0.1:{admin_port}" if admin else None
    config = write_config(tmp_path / f"{name}.yaml", {
        "listen": {"http": f"127.0.0.1:{port}", **({"admin": admin_at} if admin else {})},
        # The agent is never asked: v1.0 clients get the notification's own body.
        "tenants": {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"},
                          **(tenant or {})}},
        "push_relay": {**FAST, **relay}, **({"state": state} if state else {})})
    log = tmp_path / f"{name}.log"
    with running(gateway_cmd(config), port, log=log, env=env) as proc:
        if admin:  # it opens after the main listener
            wait_for_port(admin_port, 30, proc)
        yield Gateway(f"http://127.0.0.1:{port}", config, log,
                      f"http://{admin_at}" if admin_at else ""), proc


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


