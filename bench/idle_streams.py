"""10,000 idle streams through the gateway, to an HTTP backend and to a gRPC backend.

    python -m bench.idle_streams [--streams 10000] [--only http|grpc] [--strict]

One case per backend binding, each with a fresh gateway (`a2a-gateway serve`, the
config below) and a stub backend (bench/idle_backends.py) on 127.0.0.1. The open-files
limit (20,000 here, soft = hard) cannot hold 10,000 client connections plus 10,000
backend connections in one process, so one side of each case multiplexes over HTTP/2:

- `http-backend`: the streams enter over gRPC (v1.0 `SendStreamingMessage`, 500 per
  HTTP/2 connection) and leave as 10,000 JSON-RPC SSE connections to the stub;
- `grpc-backend`: the streams enter as 10,000 JSON-RPC SSE connections and leave over
  gRPC (the gateway puts 100 per HTTP/2 connection).

The streams are opened by load-client processes (bench/idle_clients.py); each stream
gets one event and then stays silent. Measured per case: the gateway's VmRSS/VmHWM and
open fds idle, with every stream open and after they close; the time (and gateway CPU)
to open them; its CPU while they sit idle; a unary call's p50/p95 to the same backend,
through the same ingress, idle and with the streams open. Targets: bench/targets.py
(IDLE_STREAM_TARGETS). Writes bench/last-idle-streams.json and its own section of
bench/RESULTS.md. Exit status as bench.run: 2 when the run broke, 1 with --strict and
a missed target, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench import idle_report, report
from bench.idle_clients import probe_latencies
from bench.load import percentile
from bench.procs import HOST, PYTHON, ROOT, BenchError, Proc, Processes, free_port, gateway_cmd
from bench.run import machine_info
from bench.targets import IDLE_STREAM_TARGETS, evaluate

HERE = Path(__file__).resolve().parent
PER_CHANNEL = 500  # streams per client HTTP/2 connection (http-backend case)
OPENING = 64  # streams being opened at once, per client process
PROBE_CALLS, PROBE_WARMUP = 500, 100
SETTLE_S = 2.0  # pause before a memory reading
QUIET_S = 5.0  # CPU of the gateway with every stream open and nothing else going on
OPEN_TIMEOUT_S = 180.0
DRAIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Case:
    name: str  # http-backend | grpc-backend
    backend: str  # the stub: http | grpc
    binding: str  # the backend binding in the gateway's config
    client: str  # how the streams enter: grpc | sse
    path: str


CASES = (
    Case("http-backend", "http", "JSONRPC", "grpc",
         "gRPC v1.0 client → gateway → JSON-RPC v1.0 backend (SSE)"),
    Case("grpc-backend", "grpc", "GRPC", "sse",
         "JSON-RPC v1.0 client (SSE) → gateway → gRPC v1.0 backend"),
)


def gateway_config(case: Case, ports: dict[str, int], streams: int) -> dict[str, Any]:
    """Room for every stream plus a margin, no time bound that could end a stream during
    the run, and one process (the memory measured is one process's)."""
    room = streams + 500
    url = (f"http://{HOST}:{ports['backend']}/" if case.backend == "http"
           else f"{HOST}:{ports['backend']}")
    return {
        "workers": 1,
        "listen": {"http": f"{HOST}:{ports['gw']}", "grpc": f"{HOST}:{ports['gw_grpc']}"},
        "tenants": {"idle": {"backend": {
            "url": url, "version": "1.0", "binding": case.binding,
            "precheck": False,  # the stubs serve no card
            "max_streams": room, "max_calls": 64,
            "first_event_timeout": 120.0, "stream_idle_timeout": 3600.0,
            "stream_max_duration": 3600.0}}},
        "limits": {"max_streams": room, "max_connections": room,
                   "grpc_max_connections": 64, "grpc_max_streams_per_connection": 1000},
    }


def uncommitted(paths: tuple[str, ...] = ("gateway", "translators")) -> int:
    """Files under ``paths`` that differ from the commit or are new (read-only git)."""
    count = 0
    for cmd in (["git", "diff-index", "--name-only", "HEAD", "--", *paths],
                ["git", "ls-files", "--others", "--exclude-standard", "--", *paths]):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            count += len(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                                        timeout=10).stdout.splitlines())
    return count


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def scrape(port: int) -> dict[str, Any]:
    """From the gateway's /metrics: stream slots in use, and stream outcomes so far."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session, \
            session.get(f"http://{HOST}:{port}/metrics") as resp:
        text = await resp.text()
    in_use, outcomes = 0.0, dict[str, float]()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "a2a_gateway_limit_in_use" and labels.get("limit") == "max_streams":
                in_use = sample.value
            if sample.name == "a2a_gateway_calls_total" \
                    and labels.get("operation") == "SendStreamingMessage":
                outcomes[labels["outcome"]] = outcomes.get(labels["outcome"], 0) + sample.value
    return {"streams_in_use": int(in_use), "outcomes": {k: int(v) for k, v in outcomes.items()}}


async def probe(case: Case, ports: dict[str, int]) -> dict[str, float]:
    target = (f"{HOST}:{ports['gw_grpc']}" if case.client == "grpc"
              else f"http://{HOST}:{ports['gw']}/")
    try:
        lat = sorted(await probe_latencies(case.client, target, PROBE_CALLS, PROBE_WARMUP))
    except RuntimeError as exc:
        raise BenchError(f"{case.name}: a unary probe call failed: {exc}") from None
    return {"calls": len(lat), "p50_ms": percentile(lat, 50) * 1000,
            "p95_ms": percentile(lat, 95) * 1000, "max_ms": lat[-1] * 1000}


def snapshot(gw: Proc) -> dict[str, float]:
    memory = gw.memory_mb()
    return {"rss_mb": memory["VmRSS"], "hwm_mb": memory["VmHWM"], "fds": open_fds(gw.pid),
            "cpu_s": gw.cpu_seconds()}


class Clients:
    """The load-client processes of one case, driven step by step over stdin/stdout."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self, specs: list[dict[str, Any]]) -> None:
        for n, spec in enumerate(specs):
            with open(self.logs / f"client-{spec['kind']}-{n}.log", "wb") as err:
                self.procs.append(await asyncio.create_subprocess_exec(
                    str(PYTHON), "-m", "bench.idle_clients", json.dumps(spec), cwd=ROOT,
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err))
        await self.expect("ready", 60.0)

    async def send(self, line: str) -> None:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write(line.encode() + b"\n")
            await proc.stdin.drain()

    async def expect(self, step: str, timeout: float) -> list[dict[str, Any]]:
        async def one(n: int, proc: asyncio.subprocess.Process) -> dict[str, Any]:
            assert proc.stdout is not None
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            except TimeoutError:
                raise BenchError(f"load client {n}: no `{step}` within {timeout:.0f} s") from None
            if not line:
                tail = next(self.logs.glob(f"client-*-{n}.log")).read_text()[-2000:]
                raise BenchError(f"load client {n} exited before `{step}`:\n{tail}")
            answer: dict[str, Any] = json.loads(line)
            if answer.get("step") != step:
                raise BenchError(f"load client {n}: expected `{step}`, got {answer}")
            return answer

        return list(await asyncio.gather(*(one(n, p) for n, p in enumerate(self.procs))))

    async def stop(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                if proc.stdin is not None:
                    proc.stdin.close()
                try:
                    await asyncio.wait_for(proc.wait(), 20.0)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


def client_specs(case: Case, ports: dict[str, int], streams: int, procs: int,
                 ) -> list[dict[str, Any]]:
    target = (f"{HOST}:{ports['gw_grpc']}" if case.client == "grpc"
              else f"http://{HOST}:{ports['gw']}/")
    shares = [streams // procs + (1 if n < streams % procs else 0) for n in range(procs)]
    return [{"kind": case.client, "target": target, "count": share, "opening": OPENING,
             "per_channel": PER_CHANNEL, "first_timeout": 60.0,
             "hold_max": OPEN_TIMEOUT_S + 120.0} for share in shares]


async def wait_drained(port: int) -> tuple[float, dict[str, Any]]:
    """Seconds until the gateway holds no stream slot, and its metrics then."""
    began = time.monotonic()
    while True:
        metrics = await scrape(port)
        if metrics["streams_in_use"] == 0 or time.monotonic() - began > DRAIN_TIMEOUT_S:
            return time.monotonic() - began, metrics
        await asyncio.sleep(0.25)


async def measure(case: Case, gw: Proc, ports: dict[str, int], streams: int, procs: int,
                  logs: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"case": case.name, "path": case.path, "streams": streams,
                           "client_processes": procs}
    out["idle"] = snapshot(gw)
    out["probe_idle"] = await probe(case, ports)
    clients = Clients(logs)
    try:
        await clients.start(client_specs(case, ports, streams, procs))
        before = gw.cpu_seconds()
        began = time.monotonic()
        await clients.send("open")
        opened = await clients.expect("open", OPEN_TIMEOUT_S)
        out["open_s"] = time.monotonic() - began
        out["open_cpu_s"] = gw.cpu_seconds() - before
        out["opened"] = sum(a["opened"] for a in opened)
        out["open_failed"] = sum(a["failed"] for a in opened)
        out["open_error_sample"] = next((a["sample"] for a in opened if a["sample"]), None)
        print(f"  {out['opened']}/{streams} open in {out['open_s']:.1f} s "
              f"({out['open_failed']} failed)", flush=True)
        await asyncio.sleep(SETTLE_S)
        out["open"] = snapshot(gw)
        out["open"].update(await scrape(ports["gw"]))
        await asyncio.sleep(QUIET_S)
        out["quiet_cpu_pct"] = (gw.cpu_seconds() - out["open"]["cpu_s"]) / QUIET_S * 100
        out["probe_load"] = await probe(case, ports)
        out["loaded"] = snapshot(gw)
        began = time.monotonic()
        await clients.send("close")
        closed = await clients.expect("closed", 60.0)
        out["dropped"] = sum(a["dropped"] for a in closed)
    finally:
        await clients.stop()
    drain_s, drained = await wait_drained(ports["gw"])
    out["close_s"] = time.monotonic() - began
    out["drain_s"] = drain_s
    await asyncio.sleep(SETTLE_S)
    out["after"] = snapshot(gw)
    out["after"].update(drained)
    return out


def case_metrics(r: dict[str, Any]) -> dict[str, float]:
    name = f"idle:{r['case']}"
    n = max(1, r["opened"])
    failures = (r["streams"] - r["opened"]) + r["dropped"] + r["after"]["streams_in_use"]
    return {
        f"{name}.rss_open_mb": r["open"]["rss_mb"],
        f"{name}.rss_peak_mb": r["after"]["hwm_mb"],
        f"{name}.rss_per_stream_kib": (r["open"]["rss_mb"] - r["idle"]["rss_mb"]) * 1024 / n,
        f"{name}.open_s": r["open_s"],
        f"{name}.open_cpu_ms_per_stream": r["open_cpu_s"] * 1000 / n,
        f"{name}.unary_p50_vs_idle": r["probe_load"]["p50_ms"] / r["probe_idle"]["p50_ms"],
        f"{name}.stream_failures": float(failures),
    }


async def run_case(case: Case, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    ports = {"backend": free_port(), "gw": free_port(), "gw_grpc": free_port()}
    with Processes(logs) as processes:
        processes.start(f"stub-{case.backend}", [
            str(PYTHON), "-m", "bench.idle_backends", case.backend,
            "--port", str(ports["backend"])], ports["backend"])
        config = logs / f"gateway-{case.name}.yaml"
        config.write_text(yaml.safe_dump(gateway_config(case, ports, args.streams),
                                         sort_keys=False))
        # The gRPC listener opens last: once it accepts, the gateway is up.
        gw = processes.start(f"gateway-{case.name}", gateway_cmd(config), ports["gw_grpc"])
        await asyncio.sleep(SETTLE_S)
        result = await measure(case, gw, ports, args.streams, args.procs, logs)
        if not gw.alive():
            raise BenchError(f"the gateway died during {case.name}:\n{gw.log_tail()}")
        code = processes.stop(gw)
        if code != 0:
            raise BenchError(f"the gateway exited {code} on SIGTERM:\n{gw.log_tail()}")
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    machine = {**machine_info(), "uncommitted": uncommitted()}
    logs = Path(tempfile.mkdtemp(prefix="a2a-idle-"))
    print(f"idle streams: {args.streams} per case, logs in {logs}", flush=True)
    results = []
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        print(f"{case.name}: {case.path}", flush=True)
        results.append(await run_case(case, args, logs))
    metrics: dict[str, float] = {}
    for r in results:
        metrics.update(case_metrics(r))
    shutil.rmtree(logs, ignore_errors=True)  # kept when the run broke
    return {"machine": machine, "elapsed_s": time.monotonic() - started,
            "loadavg_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "results": results, "metrics": metrics,
            "targets": evaluate(metrics, IDLE_STREAM_TARGETS)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_streams", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=10_000, help="streams per case")
    parser.add_argument("--procs", type=int, default=2, help="load-client processes per case")
    parser.add_argument("--only", default="", help="run only the case whose name has this")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--json", type=Path, default=HERE / "last-idle-streams.json")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS.md",
                        help="markdown file whose idle-streams section is rewritten ('-': none)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        data = asyncio.run(run(args))
    except BenchError as exc:
        print(f"bench.idle_streams: the run broke: {exc}", file=sys.stderr)
        return 2
    print()
    print(idle_report.text(data))
    args.json.write_text(json.dumps(data, indent=1, default=str) + "\n")
    if str(args.md) != "-":
        idle_report.write_section(args.md, data)
    return report.summarize(data, args.json, args.md, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
