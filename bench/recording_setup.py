"""What bench/recording.py's gateways are: their tenants, their `state:`, their load.

Shared by the loaded run (bench/recording.py) and the instruction count under valgrind
(bench/recording_instructions.py).
"""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from bench import peers

PATHS = {"translated": ("/u03", "0.3"), "same": ("/u10", "1.0")}
SETTINGS = ("off", "sqlite", "redis")

def redis_binary() -> str | None:
    return os.environ.get("A2A_TEST_REDIS_SERVER") or shutil.which("redis-server")


def gateway_config(port: int, echo: int, state: dict[str, Any]) -> dict[str, Any]:
    tenants = {name: {"backend": {"url": f"http://127.0.0.1:{echo}{path}",
                                  "version": version, "binding": "JSONRPC",
                                  "precheck": False}}
               for name, (path, version) in PATHS.items()}
    # One process on one core (bench/workers.py measures more).
    return {"listen": {"http": f"127.0.0.1:{port}"}, "state": state, "workers": 1,
            "tenants": tenants, "default_tenant": "translated"}


def state_for(setting: str, logs: Path, redis_port: int | None) -> dict[str, Any]:
    if setting == "off":
        return {"path": str(logs / "off.db"), "tasks": {"record": False}}
    if setting == "sqlite":
        return {"path": str(logs / "index.db")}
    return {"backend": "redis", "url": f"redis://127.0.0.1:{redis_port}/0"}


def counters(port: int) -> dict[str, float]:
    """The task index's counters from the gateway's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = {"written": 0.0, "dropped": 0.0}
    for line in text.splitlines():
        if line.startswith("a2a_gateway_task_index_records_total "):
            out["written"] += float(line.split()[-1])
        elif line.startswith("a2a_gateway_task_index_dropped_total{"):
            out["dropped"] += float(line.split()[-1])
    return out


def spec(port: int, path: str, warmup: float, duration: float,
         watch: dict[str, int]) -> dict[str, Any]:
    """bench/fastload.py's: a v1.0 SendMessage to tenant ``path``, 32 connections."""
    return {"port": port, "path": f"/{path}", "headers": peers._V10,
            "body": peers._rpc("SendMessage", peers._MSG10), "kind": "unary",
            "expect": "TASK_STATE_COMPLETED", "events": 0, "connections": peers.CONNECTIONS,
            "warmup": warmup, "duration": duration,
            "max_requests": peers.MAX_REQUESTS, "watch": watch}
