"""A real redis-server for the state tests: where its binary is, whether it answers, and
one a test may kill and start again (tests/state/conftest.py makes the fixtures)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers import free_port


def redis_binary() -> str:
    path = os.environ.get("A2A_TEST_REDIS_SERVER") or shutil.which("redis-server")
    if not path:
        pytest.fail("redis-server not found: run `make redis` (root), or set "
                    "A2A_TEST_REDIS_SERVER to a redis-server binary")
    return path


def ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisProcess:
    """A redis-server of one test's own, which the test may kill and start again on the
    same port and folder. Append-only with a sync per write: what it acknowledged
    survives SIGKILL, as with a persistent production Redis."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir),
             "--protected-mode", "yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not ping(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer PING on port {self.port}")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
