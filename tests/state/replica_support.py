"""What the replica tests share: the demo agent and gateways as processes, two
principals' keys, and one v1.0 JSON-RPC call."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.helpers import free_port, gateway_cmd, running, write_config

KEYS = {"alice": "k-alice-0123456789", "bob": "k-bob-0123456789"}
V10 = {"A2A-Version": "1.0"}


async def rpc(http: aiohttp.ClientSession, url: str, who: str, method: str,
              params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers={**V10, "x-api-key": KEYS[who]}) as resp:
        return await resp.json()


def message(text: str, ctx: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"messageId": os.urandom(6).hex(), "role": "ROLE_USER",
                        "contextId": ctx, "parts": [{"text": text}], **extra}}


@contextmanager
def demo_agent(tmp_path: Path) -> Iterator[str]:
    """The built-in demo agent in a process of its own."""
    port = free_port()
    cmd = [sys.executable, "-m", "gateway.cli", "demo-agent", "--port", str(port)]
    with running(cmd, port, log=tmp_path / "demo.log"):
        yield f"http://127.0.0.1:{port}/"


def gateway(stack: ExitStack, tmp_path: Path, name: str, agent: str,
            **extra: Any) -> tuple[str, Path]:
    """A gateway process in front of ``agent`` as tenant `t`: its base URL and log."""
    port = free_port()
    config = write_config(tmp_path / f"{name}.yaml", {
        "listen": {"http": f"127.0.0.1:{port}"},
        "tenants": {"t": {"backend": {"url": agent, "version": "0.3"}}}, **extra})
    log = tmp_path / f"{name}.log"
    stack.enter_context(running(gateway_cmd(config), port, log=log))
    return f"http://127.0.0.1:{port}", log
