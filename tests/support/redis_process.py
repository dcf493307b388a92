"""A real redis-server on a loopback port that a test may stop and start again on the
same port (an outage and the recovery), keeping nothing on disk."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile

import pytest

from tests.support.waiting import wait_until_sync


def redis_binary() -> str:
    path = os.environ.get("A2A_TEST_REDIS_SERVER") or shutil.which("redis-server")
    if not path:
        pytest.fail("redis-server not found: run `make redis` (root), or set "
                    "A2A_TEST_REDIS_SERVER to a redis-server binary")
    return path


def answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisProcess:
    """``start()`` returns once it answers PING; ``stop()`` once the process is gone and
    its port refuses connections; ``kill()`` is SIGKILL. ``durable``: append-only with a
    sync per write, so what it acknowledged survives SIGKILL, as with a persistent
    production Redis (else nothing is kept on disk)."""

    def __init__(self, port: int, durable: bool = False, *args: str) -> None:
        """``args``: more redis-server options (``--replicaof 127.0.0.1 <port>``)."""
        self.port = port
        self._args = list(args)
        self.url = f"redis://127.0.0.1:{port}/0"
        self._dir = tempfile.mkdtemp(prefix="a2a-redis-")
        self._persist = ["--appendonly", "yes", "--appendfsync", "always"] if durable \
            else ["--appendonly", "no"]
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> RedisProcess:
        self._proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             *self._persist, "--dir", self._dir, "--protected-mode", "yes", *self._args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = self._proc

        def up() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"redis-server on port {self.port} exited with {proc.returncode}")
            return answers_ping(self.port)

        wait_until_sync(up, f"redis-server answering PING on port {self.port}",
                        timeout=timeout, interval=0.02)
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
