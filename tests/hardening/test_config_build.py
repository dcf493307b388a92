"""Defect 10: what would fail while the gateway is built from a config is caught by
`check-config`, refused by `serve` with a clear message, and refused on reload while the
old config keeps serving and the watcher keeps watching."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from gateway.config.models import ConfigError, parse_config
from tests.support.helpers import VENV_BIN, free_port, running, v03, write_config
from tests.support.waiting import wait_until


def _config(port: int, demo: int, **extra: Any) -> dict[str, Any]:
    return {"listen": {"http": f"127.0.0.1:{port}"},
            "demo_agent": {"listen": f"127.0.0.1:{demo}"},
            # Translated: the reload test reads loss_policy from a lost field.
            "tenants": {"d": {"backend": {**v03(f"http://127.0.0.1:{demo}/")["backend"],
                                          "pass_through": False}}},
            "public_url": "https://public.example", "reload_interval": 0.2, **extra}


def test_check_config_and_serve_refuse_a_missing_key_file(tmp_path: Path) -> None:
    path = write_config(tmp_path / "gw.yaml", _config(free_port(), free_port(),
                                                      card_signing={"key_file": "/nonexistent"}))
    for command in (["check-config", str(path)], ["serve", "--config", str(path)]):
        done = subprocess.run([str(VENV_BIN / "a2a-gateway"), *command], capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 2, done
        assert "card_signing.key_file: cannot read /nonexistent" in done.stderr
        assert "Traceback" not in done.stderr


def test_preflight_checks_relay_keys_from_the_environment() -> None:
    from gateway.preflight import preflight

    config = parse_config({"tenants": {"d": v03("http://127.0.0.1:1/")}})
    with pytest.raises(ConfigError, match="env A2A_GATEWAY_RELAY_KEYS: every relay key must"):
        preflight(config, {"A2A_GATEWAY_RELAY_KEYS": "not-a-key"})


async def test_a_failed_reload_keeps_the_old_config_and_the_watcher(tmp_path: Path) -> None:
    port, demo = free_port(), free_port()
    path = write_config(tmp_path / "gw.yaml", _config(port, demo))
    url = f"http://127.0.0.1:{port}/"
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user", "metadata": {"k": 1},
        "parts": [{"kind": "text", "text": "hi"}]}}}
    cmd = [str(VENV_BIN / "a2a-gateway"), "serve", "--config", str(path)]
    with running(cmd, port, log=tmp_path / "gw.log"):
        async with aiohttp.ClientSession() as http:
            await _refused_then_applied(http, path, port, demo, url, send)
    log = (tmp_path / "gw.log").read_text()
    assert "config reload refused" in log and "card_signing.key_file" in log


async def _refused_then_applied(http: aiohttp.ClientSession, path: Path, port: int, demo: int,
                                url: str, send: dict[str, Any]) -> None:
    # An edit that only building the gateway can refuse...
    write_config(path, _config(port, demo, card_signing={"key_file": "/nonexistent"}))
    await asyncio.sleep(1.0)
    async with http.post(url, json=send) as resp:
        assert "result" in await resp.json()  # the old config serves on
    # ... then a valid one, which the watcher must still apply.
    data = yaml.safe_load(path.read_text())
    data.pop("card_signing")
    data["loss_policy"] = "reject"
    write_config(path, data)
    async def applied() -> bool:
        async with http.post(url, json={**send, "method": "tasks/get",
                                        "params": {"id": "t", "metadata": {"k": 1}}}) as resp:
            reply = await resp.json()
        return bool(reply.get("error", {}).get("code") == -32602)  # metadata refused: reject

    await wait_until(applied, "the valid edit after a refused one applied", interval=0.2)
