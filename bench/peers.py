"""The peer comparison: one middle hop on one core, a fixed-answer backend, same load.

Part of `python -m bench.run` (issue 14, "Benchmark"). Processes, all on 127.0.0.1:

| process | core | what |
|---|---|---|
| nginx stub (bench/nginx.py) | 1 | the backend: fixed v1.0 / v0.3 JSON-RPC answers, a fixed SSE stream |
| load client (bench/fastload.py) | 1 | raw HTTP/1.1 keep-alive client on uvloop, closed loop |
| nginx proxy | 0 | plain reverse proxy, keep-alive upstream pool |
| bare aiohttp proxy (bench/plain_proxy.py) | 0 | pass-through, no parsing |
| gateway (`a2a-gateway serve`) | 0 | tenants t10 (v1.0 stub), t03 (v0.3 stub), s10 (v1.0 stream) |

Peers: `direct` (client → stub), `nginx`, `bare` (aiohttp), `gw-same` (v1.0 JSON-RPC
client → gateway → v1.0 JSON-RPC backend, forwarded as sent: `pass_through`, the default),
`gw-03-10` (v0.3 JSON-RPC client → gateway → v1.0 backend, translated) and `gw-10-03` (v1.0
client → v0.3 backend, translated). The gateway and the bare proxy run on the event loop
chosen with `--loop` (A2A_GATEWAY_LOOP in their environment); the other loop is measured
too, for throughput. Only one middle hop is busy at a time.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import nginx
from bench.procs import ROOT, BenchError, Proc, Processes, free_port, gateway_cmd, plain_proxy_cmd

MIDDLE_CORE, LOAD_CORE = "0", "1"
CONNECTIONS, STREAM_CONNECTIONS = 32, 16
LOOPS = ("asyncio", "uvloop")

_V10 = {"Content-Type": "application/json", "A2A-Version": "1.0"}
_V03 = {"Content-Type": "application/json"}
_MSG10 = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "bench ping"}]}
_MSG03 = {"kind": "message", "messageId": "m-1", "role": "user",
          "parts": [{"kind": "text", "text": "bench ping"}]}


def _rpc(method: str, message: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": {"message": message}}, separators=(",", ":"))


@dataclass(frozen=True)
class Peer:
    name: str
    hop: str  # direct | nginx | bare | gw
    client: str  # 10 | 03
    backend: str  # fixed (nginx `return 200`) | echo (bench/echo_stub.py)
    path: str  # on the hop's port
    description: str


PEERS = {p.name: p for p in [
    Peer("direct", "direct", "10", "fixed", "/v10",
         "v1.0 client → nginx stub (no middle hop)"),
    Peer("nginx", "nginx", "10", "fixed", "/v10", "v1.0 client → nginx proxy → nginx stub"),
    Peer("bare", "bare", "10", "fixed", "/t10",
         "v1.0 client → bare aiohttp proxy → nginx stub"),
    Peer("gw-same", "gw", "10", "fixed", "/t10", "v1.0 JSON-RPC client → gateway → v1.0 "
         "JSON-RPC nginx stub (same dialect, forwarded as sent)"),
    Peer("direct-echo", "direct", "10", "echo", "/v10",
         "v1.0 client → echo stub (no middle hop)"),
    Peer("nginx-echo", "nginx", "10", "echo", "/e/v10",
         "v1.0 client → nginx proxy → echo stub"),
    Peer("bare-echo", "bare", "10", "echo", "/e10",
         "v1.0 client → bare aiohttp proxy → echo stub"),
    Peer("gw-03-10", "gw", "03", "echo", "/e10", "v0.3 JSON-RPC client → gateway → v1.0 "
         "JSON-RPC echo stub (translated)"),
    Peer("gw-10-03", "gw", "10", "echo", "/e03", "v1.0 JSON-RPC client → gateway → v0.3 "
         "JSON-RPC echo stub (translated)"),
]}
# Streams come from the echo stub (the gateway checks the id of every event).
STREAM_PATHS = {"direct": "/sse10", "nginx": "/e/sse10", "bare": "/s10", "gw": "/s10"}
# The peer each gateway path is compared with: the bare proxy to the same backend.
BARE_FOR = {"gw-same": "bare", "gw-03-10": "bare-echo", "gw-10-03": "bare-echo"}
NGINX_FOR = {"gw-same": "nginx", "gw-03-10": "nginx-echo", "gw-10-03": "nginx-echo"}


@dataclass(frozen=True)
class Run:
    """One measured scenario: a peer under one load, the middle hop on one loop."""

    kind: str  # tput | lat | stream
    peer: str
    loop: str  # the middle hop's loop (asyncio for direct and nginx: none)

    @property
    def id(self) -> str:
        hop = PEERS[self.peer].hop
        return f"peers:{self.kind}:{self.peer}" + (f"@{self.loop}" if hop in ("bare", "gw")
                                                   else "")


@dataclass(frozen=True)
class Timing:
    warmup: float
    duration: float
    connections: int


TIMINGS = {"tput": Timing(1.0, 4.0, CONNECTIONS), "lat": Timing(0.5, 2.0, 1),
           "stream": Timing(1.0, 3.0, STREAM_CONNECTIONS)}
MAX_REQUESTS = 2_000_000  # a bound on any one measured window


def plan(primary: str, other: str | None, with_nginx: bool) -> list[Run]:
    runs = []
    unary = [p for p in PEERS if with_nginx or PEERS[p].hop != "nginx"]
    for kind, peers in (("tput", unary),
                        ("lat", ["direct", "nginx", "bare", "gw-same", "bare-echo",
                                 "gw-03-10"]),
                        ("stream", ["direct-echo", "bare-echo", "gw-03-10"])):
        runs += [Run(kind, p, primary) for p in peers
                 if with_nginx or PEERS[p].hop != "nginx"]
    if other:
        runs += [Run("tput", p, other) for p in ("bare", "gw-same", "bare-echo", "gw-03-10")]
    return runs


def _spec(run: Run, port: int, watch: dict[str, int]) -> dict[str, Any]:
    peer, timing = PEERS[run.peer], TIMINGS[run.kind]
    stream = run.kind == "stream"
    if stream:
        path = STREAM_PATHS[peer.hop]
        method = "SendStreamingMessage" if peer.client == "10" else "message/stream"
        headers = {**(_V10 if peer.client == "10" else _V03), "Accept": "text/event-stream"}
    else:
        path = peer.path
        method = "SendMessage" if peer.client == "10" else "message/send"
        headers = _V10 if peer.client == "10" else _V03
    return {"port": port, "path": path, "headers": headers,
            "body": _rpc(method, _MSG10 if peer.client == "10" else _MSG03),
            "kind": "stream" if stream else "unary",
            "expect": "TASK_STATE_COMPLETED" if peer.client == "10" else "completed",
            "events": nginx.STREAM_EVENTS, "connections": timing.connections,
            "warmup": timing.warmup, "duration": timing.duration,
            "max_requests": MAX_REQUESTS, "watch": watch}


def _load(spec: dict[str, Any], cores: str | None = LOAD_CORE) -> dict[str, Any]:
    """Run the load client (on ``cores``; None: unpinned) and return its result."""
    limit = spec["warmup"] + spec["duration"] + 30.0
    pin = ["taskset", "-c", cores] if cores is not None else []
    cmd = [*pin, sys.executable, "-m", "bench.fastload", json.dumps(spec)]
    try:
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise BenchError(f"the load client still ran after {limit:.0f}s") from None
    if done.returncode != 0:
        raise BenchError(f"the load client exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def gateway_config(gw_port: int, stub_port: int, echo_port: int) -> dict[str, Any]:
    def backend(port: int, path: str, version: str) -> dict[str, Any]:
        return {"backend": {"url": f"http://127.0.0.1:{port}{path}", "version": version,
                            "binding": "JSONRPC", "precheck": False}}

    config: dict[str, Any] = {
        "listen": {"http": f"127.0.0.1:{gw_port}"},
        "tenants": {"t10": backend(stub_port, "/v10", "1.0"),
                    "e10": backend(echo_port, "/v10", "1.0"),
                    "e03": backend(echo_port, "/v03", "0.3"),
                    "s10": backend(echo_port, "/sse10", "1.0")},
        "default_tenant": "t10",
    }
    try:  # one process on one core, whatever the default becomes
        from gateway.config.models import GatewayConfig
        if "workers" in GatewayConfig.model_fields:
            config["workers"] = 1
    except ImportError:
        pass
    return config


def ensure_uvloop() -> bool:
    """uvloop in this venv (the gateway's), installed with pip for the bench if missing."""
    try:
        import uvloop
    except ImportError:
        print("bench: installing uvloop into the venv (pip)...", flush=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                               "--disable-pip-version-check", "uvloop"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            print(f"bench: pip install uvloop failed: {done.stderr[-300:]}", flush=True)
            return False
        import importlib
        importlib.invalidate_caches()
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return False
    return True


def uses_uvloop(pid: int) -> bool:
    """Whether uvloop's extension is mapped in the process (any of its threads/children)."""
    try:
        return "uvloop" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _pinned(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", MIDDLE_CORE, *cmd]


def _start_middle(processes: Processes, logs: Path, loop: str, ports: dict[str, int],
                  ) -> dict[str, Proc]:
    env = {"A2A_GATEWAY_LOOP": loop}
    bare = processes.start(f"bare-{loop}", _pinned(plain_proxy_cmd(ports["bare"], {
        "t10": f"http://127.0.0.1:{ports['stub']}/v10",
        "e10": f"http://127.0.0.1:{ports['echo']}/v10",
        "s10": f"http://127.0.0.1:{ports['echo']}/sse10"})), ports["bare"], env=env)
    config = logs / f"peers-gateway-{loop}.yaml"
    config.write_text(yaml.safe_dump(gateway_config(ports["gw"], ports["stub"], ports["echo"]),
                                     sort_keys=False))
    gw = processes.start(f"peers-gateway-{loop}", _pinned(gateway_cmd(config)), ports["gw"],
                         env=env)
    return {"bare": bare, "gw": gw}


# What makes a round the best of a peer's rounds: the most answers (or events) per second,
# the lowest latency at one connection.
_BEST = {"tput": ("rps", 1), "lat": ("p50_ms", -1), "stream": ("events_per_s", 1)}


def run_peers(logs: Path, primary: str, other: str | None, only: str = "",
              rounds: int = 1) -> dict[str, Any]:
    """Measure every peer; the dict bench.run stores under "peers". With ``rounds`` > 1,
    the primary loop's runs are repeated, all of them in turn each round, and each peer's
    best round is reported (the others are kept in its `rounds`): on a shared machine one
    window may lose a third of the hop's CPU to other work, and interleaving gives every
    peer the same chances."""
    binary, nginx_note = nginx.ensure_nginx()
    if binary is None:
        # The echo stub stands in for the nginx stub; the nginx rows are missing.
        nginx_note = f"MISSING: {nginx_note}; the echo stub serves every peer"
        print(f"peers: {nginx_note}", flush=True)
    prefix = logs / "nginx"
    prefix.mkdir(mode=0o755)
    prefix.chmod(0o755)
    logs.chmod(0o755)  # nginx workers (nobody) must reach the stub's stream file
    ports = {"stub": free_port(), "echo": free_port(), "nginx": free_port(),
             "bare": free_port(), "gw": free_port()}
    runs = [r for r in plan(primary, other, binary is not None) if re.search(only, r.id)]
    results: list[dict[str, Any]] = []
    loops: dict[str, dict[str, bool]] = {}
    with Processes(logs) as processes:
        echo = start_echo(processes, ports["echo"])
        fixed: dict[str, Proc] = {}
        if binary is None:
            stub, ports["stub"] = echo, ports["echo"]
        else:
            stub = processes.start("nginx-stub", ["taskset", "-c", LOAD_CORE,
                                                  *nginx.nginx_cmd(binary, prefix, nginx.stub_conf(
                                                      prefix, ports["stub"]))], ports["stub"])
            fixed["nginx"] = processes.start("nginx-proxy", _pinned(nginx.nginx_cmd(
                binary, prefix, nginx.proxy_conf(prefix, ports["nginx"], ports["stub"],
                                                 ports["echo"]))), ports["nginx"])
        for loop in [primary] + ([other] if other else []):
            mine = [r for r in runs if r.loop == loop]
            if loop == primary:
                mine = mine * max(1, rounds)
            if not mine:
                continue
            middle = _start_middle(processes, logs, loop, ports)
            time.sleep(0.5)
            loops[loop] = {name: uses_uvloop(p.pid) for name, p in middle.items()}
            hops = {**fixed, **middle, "direct": stub, "direct-echo": echo}
            for run in mine:
                peer = PEERS[run.peer]
                hop = peer.hop + ("-echo" if peer.hop == "direct" and peer.backend == "echo"
                                  else "")
                port = {"direct": ports["stub"], "direct-echo": ports["echo"]}.get(
                    hop, ports.get(hop, 0))
                load = measure(run, _spec(run, port, {"hop": hops[hop].pid}), hops)
                _keep_best(results, {"id": run.id, "kind": run.kind, "peer": run.peer,
                                     "loop": run.loop, "load": load})
            for p in middle.values():
                code = processes.stop(p)
                if code not in (0, -15):
                    raise BenchError(f"{p.name} exited {code} on SIGTERM:\n{p.log_tail()}")
    return {"nginx": nginx_note, "results": results, "loops": loops, "skipped": False,
            "primary": primary, "other": other, "rounds": max(1, rounds)}


def start_echo(processes: Processes, port: int, name: str = "echo-stub") -> Proc:
    """bench/echo_stub.py on the load client's core."""
    return processes.start(name, ["taskset", "-c", LOAD_CORE, sys.executable, "-m",
                                  "bench.echo_stub", "--port", str(port)], port)


def measure(run: Run, spec: dict[str, Any], procs: dict[str, Proc], label: str = "",
            ) -> dict[str, Any]:
    """One load run (``spec`` watches the middle hop as `hop`), checked: every process of
    ``procs`` still alive, some answer right. Adds the hop's CPU per request and its use
    of its core, prints one line (``label``, or the run's id) and returns the result."""
    name = label or run.id
    load = _load(spec)
    for proc_name, p in procs.items():
        if not p.alive():
            raise BenchError(f"{proc_name} died during {name}:\n{p.log_tail()}")
    if load["ok"] == 0:
        raise BenchError(f"{name}: no answer right; first error: {load['error_sample']}")
    cpu = load["cpu_s"]["hop"]
    load["cpu_ms_per_req"] = cpu / load["ok"] * 1000
    load["hop_cpu_util"] = cpu / load["wall_s"] if load["wall_s"] else math.nan
    extra = (f"  {load['events_per_s']:>9.0f} ev/s  1st event "
             f"{load['first_event_p50_ms']:.2f} ms" if run.kind == "stream" else "")
    print(f"  {name:<28} {load['rps']:>8.0f} req/s  p50 {load['p50_ms']:6.2f} ms"
          f"  hop CPU {load['hop_cpu_util']:4.0%} {load['cpu_ms_per_req']:.3f} "
          f"ms/req  errors {load['errors']}{extra}", flush=True)
    return load


def _keep_best(results: list[dict[str, Any]], result: dict[str, Any]) -> None:
    """Add a run's result, or replace an earlier round's of the same run when it did
    better; every round's headline figure stays in `rounds`."""
    metric, sign = _BEST[result["kind"]]
    load = result["load"]
    for i, old in enumerate(results):
        if old["id"] == result["id"]:
            load["rounds"] = old["load"]["rounds"] = [*old["load"]["rounds"], load[metric]]
            if sign * load[metric] > sign * old["load"][metric]:
                results[i] = result
            return
    load["rounds"] = [load[metric]]
    results.append(result)
