"""Test plumbing: free loopback ports, starting real processes, in-process gateways."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.support.waiting import wait_until_sync

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SDK_PYTHON = {
    "0.3": ROOT / ".venvs" / "sdk03" / "bin" / "python",
    "1.0": ROOT / ".venvs" / "sdk13" / "bin" / "python",
}
PEERS = ROOT / "tests" / "interop" / "peers"


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_EPHEMERAL_FLOOR = _ephemeral_floor()
_handed_out: set[int] = set()


def free_port() -> int:
    """A port to listen on, below the kernel's ephemeral range: a port the kernel picks
    (bind to 0) comes from the range its outgoing connections use too, and the suite's
    own client sockets took one between the pick and the listen (a gRPC listener failed
    with "Address already in use" once in four runs). Not handed out twice."""
    low = 10_000
    if _EPHEMERAL_FLOOR - low > 1000:
        for _ in range(200):
            port = random.randrange(low, _EPHEMERAL_FLOOR)
            if port in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen[Any] | None = None,
                  ) -> None:
    def listening() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before port {port} opened")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        return False

    try:
        wait_until_sync(listening, f"a listener on 127.0.0.1:{port}", timeout=timeout)
    except AssertionError as exc:
        raise TimeoutError(str(exc)) from None


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@contextlib.contextmanager
def running(cmd: list[str], port: int, *, log: Path, timeout: float = 60.0,
            env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A real process on 127.0.0.1:port for the duration of the block; its output goes
    to ``log`` so a failing test can show it."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **(env or {})})
        try:
            wait_for_port(port, timeout, proc)
            yield proc
        finally:
            stop_process(proc)


def write_config(path: Path, config: dict[str, Any]) -> Path:
    """``config`` as YAML at ``path``; its state store beside it unless it names one, and
    one process unless it names `workers` (tests/integration/test_workers.py does)."""
    config = {"state": {"path": str(path.with_suffix(".state.db"))}, "workers": 1, **config}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def gateway_cmd(config_path: Path) -> list[str]:
    return [str(VENV_BIN / "a2a-gateway"), "serve", "--config", str(config_path)]


MakeGateway = Callable[..., Awaitable[str]]


def v03(url: str, version: str = "0.3", binding: str = "JSONRPC") -> dict[str, Any]:
    """A tenant entry for a backend (v0.3 JSON-RPC unless told otherwise)."""
    return {"backend": {"url": url, "version": version, "binding": binding}}


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """An aiohttp app on a free 127.0.0.1 port for the block; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


class ManualClock:
    """A clock the test moves by hand (``clock.now += 5``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def receiving_webhooks() -> AsyncIterator[tuple[str, asyncio.Queue[Any]]]:
    """A client's webhook on 127.0.0.1 for the block: its URL, and the JSON bodies POSTed
    to it, in order."""
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/hook", hook)
    async with serving(app) as base:
        yield f"{base}/hook", received


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A real redis-server on a free loopback port for the block (in memory only); yields
    its URL. `make redis` installs it; A2A_TEST_REDIS_SERVER names another binary."""
    from tests.support.redis_process import RedisProcess

    redis = RedisProcess(free_port()).start()
    try:
        yield redis.url
    finally:
        redis.close()
