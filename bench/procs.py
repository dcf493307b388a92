"""The benchmark's processes: start on loopback, wait for the port, read /proc, stop."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)  # the gateway's venv (.venv) runs the benchmark
GATEWAY = PYTHON.parent / "a2a-gateway"
SDK13_PYTHON = ROOT / ".venvs" / "sdk13" / "bin" / "python"
AGENT_V10 = ROOT / "tests" / "interop" / "peers" / "agent_v10.py"
HOST = "127.0.0.1"
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    """The run itself broke (a process did not start, a load client crashed)."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/<pid>/stat fields 14 and 15)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()  # fields[0] is field 3 (state)
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{name} exited with {proc.returncode} before port {port} opened")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.2):
            return
        time.sleep(0.05)
    raise BenchError(f"{name}: nothing listens on {HOST}:{port} after {timeout:.0f}s")


@dataclass
class Proc:
    """One started process and what /proc says about it."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def memory_mb(self) -> dict[str, float]:
        """VmRSS (resident now) and VmHWM (peak resident) in MiB, from /proc/<pid>/status."""
        out: dict[str, float] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
        return out

    def log_tail(self, chars: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-chars:]
        return ""


@dataclass
class Processes:
    """Processes started for one run; all stopped (SIGTERM, then SIGKILL) on exit."""

    logs: Path
    procs: list[Proc] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], port: int, timeout: float = 60.0,
              env: dict[str, str] | None = None) -> Proc:
        log = self.logs / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                     stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})})
        proc = Proc(name, popen, port, log)
        self.procs.append(proc)
        try:
            wait_for_port(port, timeout, popen, name)
        except BenchError as exc:
            raise BenchError(f"{exc}\n--- {log} ---\n{proc.log_tail()}") from None
        return proc

    def stop(self, proc: Proc, timeout: float = 15.0) -> int:
        if proc.popen.poll() is None:
            proc.popen.terminate()
            try:
                proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait()
        return proc.popen.returncode

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop_all()


def demo_backend_cmd(port: int) -> list[str]:
    return [str(PYTHON), "-m", "bench.backend", "--port", str(port)]


def sdk_agent_cmd(port: int) -> list[str]:
    if not SDK13_PYTHON.exists():
        raise BenchError(f"missing {SDK13_PYTHON}: run `make venvs`")
    return [str(SDK13_PYTHON), str(AGENT_V10), "--jsonrpc-port", str(port)]


def plain_proxy_cmd(port: int, routes: dict[str, str]) -> list[str]:
    cmd = [str(PYTHON), "-m", "bench.plain_proxy", "--port", str(port)]
    for name, url in routes.items():
        cmd += ["--route", f"{name}={url}"]
    return cmd


def gateway_cmd(config: Path) -> list[str]:
    return [str(GATEWAY), "serve", "--config", str(config)]
