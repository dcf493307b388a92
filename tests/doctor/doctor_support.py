"""Plumbing the doctor tests share: URLs, the CLI as a real process, the report schema."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from gateway.doctor.commands import SCHEMA_PATH

CLI = str(Path(sys.executable).parent / "a2a-gateway")


def http(port: int) -> str:
    return f"http://127.0.0.1:{port}"


async def cli(*args: str) -> tuple[int, str]:
    """`a2a-gateway ARGS` as a process (the test's loop keeps serving meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return loaded
