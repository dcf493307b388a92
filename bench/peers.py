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


TIMINGS = {"tput": Timing(1.0, 5.0, CONNECTIONS), "lat": Timing(0.5, 2.0, 1),
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


def _load(spec: dict[str, Any]) -> dict[str, Any]:
    limit = spec["warmup"] + spec["duration"] + 30.0
    cmd = ["taskset", "-c", LOAD_CORE, sys.executable, "-m", "bench.fastload", json.dumps(spec)]
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
        from gateway.config import GatewayConfig
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


def run_peers(logs: Path, primary: str, other: str | None, only: str = "",
              ) -> dict[str, Any]:
    """Measure every peer; the dict bench.run stores under "peers"."""
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
        echo = processes.start("echo-stub", ["taskset", "-c", LOAD_CORE, sys.executable, "-m",
                                             "bench.echo_stub", "--port", str(ports["echo"])],
                               ports["echo"])
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
                proc = hops[hop]
                port = {"direct": ports["stub"], "direct-echo": ports["echo"]}.get(
                    hop, ports.get(hop, 0))
                load = _load(_spec(run, port, {"hop": proc.pid}))
                for name, p in {**hops}.items():
                    if not p.alive():
                        raise BenchError(f"{name} died during {run.id}:\n{p.log_tail()}")
                if load["ok"] == 0:
                    raise BenchError(f"{run.id}: no answer right; first error: "
                                     f"{load['error_sample']}")
                cpu = load["cpu_s"]["hop"]
                load["cpu_ms_per_req"] = cpu / load["ok"] * 1000 if load["ok"] else math.nan
                load["hop_cpu_util"] = cpu / load["wall_s"] if load["wall_s"] else math.nan
                results.append({"id": run.id, "kind": run.kind, "peer": run.peer,
                                "loop": run.loop, "load": load})
                extra = (f"  {load['events_per_s']:>9.0f} ev/s  1st event "
                         f"{load['first_event_p50_ms']:.2f} ms" if run.kind == "stream" else "")
                print(f"  {run.id:<28} {load['rps']:>8.0f} req/s  p50 {load['p50_ms']:6.2f} ms"
                      f"  hop CPU {load['hop_cpu_util']:4.0%} {load['cpu_ms_per_req']:.3f} "
                      f"ms/req  errors {load['errors']}{extra}", flush=True)
            for p in middle.values():
                code = processes.stop(p)
                if code not in (0, -15):
                    raise BenchError(f"{p.name} exited {code} on SIGTERM:\n{p.log_tail()}")
    return {"nginx": nginx_note, "results": results, "loops": loops, "skipped": False,
            "primary": primary, "other": other}


def _get(by_id: dict[str, dict[str, Any]], rid: str, key: str) -> float:
    r = by_id.get(rid)
    value = None if r is None else r["load"].get(key)
    return math.nan if value is None else float(value)


def _div(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def derive(data: dict[str, Any]) -> dict[str, float]:
    """The flat metrics `peers:*` that bench/targets.py reads."""
    by_id = {r["id"]: r for r in data.get("results", [])}
    primary = data.get("primary", "asyncio")
    m: dict[str, float] = {}
    for r in by_id.values():
        for key in ("rps", "p50_ms", "p99_ms", "cpu_ms_per_req", "errors", "events_per_s",
                    "first_event_p50_ms"):
            if key in r["load"]:
                m[f"{r['id']}.{key}"] = float(r["load"][key])

    def rid(kind: str, peer: str, loop: str = primary) -> str:
        return Run(kind, peer, loop).id

    for peer, label in (("gw-03-10", "translated"), ("gw-10-03", "translated_10_03"),
                        ("gw-same", "same")):
        rps = _get(by_id, rid("tput", peer), "rps")
        m[f"peers:tput.{label}_vs_bare"] = _div(rps, _get(by_id, rid("tput", BARE_FOR[peer]),
                                                          "rps"))
        m[f"peers:tput.{label}_vs_nginx"] = _div(rps, _get(
            by_id, rid("tput", NGINX_FOR[peer]), "rps"))
        m[f"peers:tput.{label}_cpu_ms_per_req"] = _get(by_id, rid("tput", peer),
                                                       "cpu_ms_per_req")
        # Requests per CPU-second of the hop, gateway ÷ bare: what the throughput ratio
        # would be with both saturating their core (robust to a shared, busy machine).
        m[f"peers:tput.{label}_per_cpu_vs_bare"] = _div(
            _get(by_id, rid("tput", BARE_FOR[peer]), "cpu_ms_per_req"),
            m[f"peers:tput.{label}_cpu_ms_per_req"])
        if data.get("other"):
            other = data["other"]
            m[f"peers:tput.{label}_vs_bare@{other}"] = _div(
                _get(by_id, rid("tput", peer, other), "rps"),
                _get(by_id, rid("tput", BARE_FOR[peer], other), "rps"))
    for peer, label in (("gw-03-10", "translated"), ("gw-same", "same")):
        m[f"peers:lat.{label}_added_p50_ms"] = (
            _get(by_id, rid("lat", peer), "p50_ms")
            - _get(by_id, rid("lat", BARE_FOR[peer]), "p50_ms"))
    m["peers:tput.bare_vs_nginx"] = _div(_get(by_id, rid("tput", "bare"), "rps"),
                                         _get(by_id, rid("tput", "nginx"), "rps"))
    m["peers:stream.translated_events_per_s"] = _get(by_id, rid("stream", "gw-03-10"),
                                                     "events_per_s")
    m["peers:stream.first_event_added_ms"] = (
        _get(by_id, rid("stream", "gw-03-10"), "first_event_p50_ms")
        - _get(by_id, rid("stream", "direct-echo"), "first_event_p50_ms"))
    m["peers:all.errors"] = float(sum(r["load"]["errors"] for r in by_id.values()))
    return m


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def readme_rows(metrics: dict[str, float], checks: list[dict[str, Any]]) -> list[list[str]]:
    """The short table for the README: the ratios and figures issue 14 asks for."""
    def target(metric: str) -> str:
        for c in checks:
            if c["metric"] == metric:
                return f"{c['status']} (target {c['op']} {c['limit']:g})"
        return ""

    g = metrics.get
    ids = dict.fromkeys(Run("tput", name, loop).id for name in (
        "direct", "nginx", "bare", "gw-same", "bare-echo", "gw-03-10") for loop in LOOPS)
    rates = [[f"req/s, {CONNECTIONS} connections: {rid.partition(':tput:')[2]}",
              _f(g(f"{rid}.rps"), 0), "recorded"] for rid in ids if f"{rid}.rps" in metrics]
    return rates + [
        ["translated ÷ bare aiohttp (throughput)", _f(g("peers:tput.translated_vs_bare"), 2),
         target("peers:tput.translated_vs_bare")],
        ["same-dialect ÷ bare aiohttp (throughput)", _f(g("peers:tput.same_vs_bare"), 2),
         target("peers:tput.same_vs_bare")],
        ["translated ÷ bare aiohttp, requests per CPU-second of the hop",
         _f(g("peers:tput.translated_per_cpu_vs_bare"), 2), "recorded"],
        ["same-dialect ÷ bare aiohttp, requests per CPU-second of the hop",
         _f(g("peers:tput.same_per_cpu_vs_bare"), 2), "recorded"],
        ["translated ÷ nginx (throughput, physical limit)",
         _f(g("peers:tput.translated_vs_nginx"), 2), "recorded"],
        ["same-dialect ÷ nginx", _f(g("peers:tput.same_vs_nginx"), 2), "recorded"],
        ["added p50 at 1 connection, translated vs bare (ms)",
         _f(g("peers:lat.translated_added_p50_ms"), 3),
         target("peers:lat.translated_added_p50_ms")],
        ["added p50 at 1 connection, same-dialect vs bare (ms)",
         _f(g("peers:lat.same_added_p50_ms"), 3), target("peers:lat.same_added_p50_ms")],
        ["translated SSE events/s through one core",
         _f(g("peers:stream.translated_events_per_s"), 0),
         target("peers:stream.translated_events_per_s")],
        ["first event, translated stream, 16-way: added vs backend (ms)",
         _f(g("peers:stream.first_event_added_ms"), 2),
         target("peers:stream.first_event_added_ms")],
        ["gateway CPU per translated request (ms)",
         _f(g("peers:tput.translated_cpu_ms_per_req"), 3), "recorded"],
        ["gateway CPU per same-dialect request (ms)",
         _f(g("peers:tput.same_cpu_ms_per_req"), 3), "recorded"],
    ] + [[f"{'translated' if key.startswith('peers:tput.translated_vs') else 'same-dialect'}"
          f" ÷ bare aiohttp, both on {key.partition('@')[2]}", _f(value, 2), "recorded"]
         for key, value in sorted(metrics.items())
         if "@" in key and key.startswith(("peers:tput.translated_vs_bare@",
                                           "peers:tput.same_vs_bare@"))]


def markdown(data: dict[str, Any], metrics: dict[str, float],
             checks: list[dict[str, Any]]) -> str:
    """The peers section of bench/RESULTS.md (with the short table for the README)."""
    from bench.report import md_table
    primary, other = data.get("primary", "asyncio"), data.get("other")
    if data.get("skipped"):
        return ("## Peers: one core for the middle hop\n\nNot measured: "
                f"{data.get('nginx')} (the fixed-answer backend is nginx).\n")
    by_id = {r["id"]: r for r in data["results"]}

    def cell(kind: str, peer: str, key: str, loop: str = primary, digits: int = 0) -> str:
        return _f(_get(by_id, Run(kind, peer, loop).id, key), digits)

    ngx_missing = "peers:tput:nginx" not in by_id
    rows = []
    for name, peer in PEERS.items():
        row = [f"{name}", peer.description,
               cell("tput", name, "rps"), cell("tput", name, "p50_ms", digits=2),
               cell("tput", name, "cpu_ms_per_req", digits=3),
               _f(100 * _get(by_id, Run("tput", name, primary).id, "hop_cpu_util"), 0),
               cell("lat", name, "p50_ms", digits=3)]
        if other:
            row.append(cell("tput", name, "rps", other) if peer.hop in ("bare", "gw")
                       else "")
        rows.append(row)
    header = ["peer", "path", f"req/s ({CONNECTIONS} conn)", "p50 ms",
              "hop CPU ms/req", "hop CPU %", "p50 ms (1 conn)"]
    if other:
        header.append(f"req/s on {other}")
    stream_rows = [[name, cell("stream", name, "events_per_s"),
                    cell("stream", name, "rps", digits=1),
                    cell("stream", name, "first_event_p50_ms", digits=2),
                    cell("stream", name, "cpu_ms_per_req", digits=2)]
                   for name in ("direct-echo", "bare-echo", "gw-03-10")]

    readme = readme_rows(metrics, checks)
    loop_lines = []
    for loop, seen in data.get("loops", {}).items():
        loop_lines.append(f"`A2A_GATEWAY_LOOP={loop}`: uvloop mapped in the gateway: "
                          f"{'yes' if seen.get('gw') else 'no'}, in the bare proxy: "
                          f"{'yes' if seen.get('bare') else 'no'}.")
    parts = [
        "## Peers: one core for the middle hop",
        "",
        f"Same load, same backend for every peer. The middle hop (nginx proxy, bare aiohttp "
        f"proxy or gateway) is pinned to CPU {MIDDLE_CORE} (`taskset`); the load client "
        f"(bench/fastload.py, raw HTTP/1.1 on uvloop) and the fixed-answer backends share CPU "
        f"{LOAD_CORE}: nginx `return 200` (bench/nginx.py) for the calls the gateway forwards "
        "as sent, and bench/echo_stub.py, which echoes the JSON-RPC id, for translated calls "
        "and streams (the gateway checks the id of the answer against the one it sent); each "
        "gateway path is compared with the bare proxy and nginx in front of the same stub. "
        "Unary: a small "
        f"`SendMessage`/`message/send`, {CONNECTIONS} keep-alive connections, closed loop, "
        f"{TIMINGS['tput'].warmup:g} s warm-up then {TIMINGS['tput'].duration:g} s measured; "
        f"latency: 1 connection, {TIMINGS['lat'].duration:g} s. Streams: "
        f"{STREAM_CONNECTIONS} connections, each stream {nginx.STREAM_EVENTS} small SSE "
        f"events from the backend, the client counting them, {TIMINGS['stream'].duration:g} "
        f"s. Gateway and bare proxy on `{primary}`"
        + (f" (and `{other}` for the last column)" if other else "") + ". "
        "`hop CPU ms/req` = utime+stime of the middle hop (/proc/<pid>/stat, with "
        "children) over the measured window ÷ requests; `hop CPU %` below ~95 means the "
        "middle hop was not saturated (waiting, or its core taken by another process: the "
        "machine is shared, see the load average). nginx: " + str(data.get("nginx"))
        + ("" if not ngx_missing else " — **nginx row missing**") + ".",
        "",
        " ".join(loop_lines),
        "",
        "### Table for the README",
        "",
        md_table(["measure", "value", "target"], readme, left=1),
        "",
        "### Unary",
        "",
        md_table(header, rows, left=2),
        "",
        "### Streams (16 in flight)",
        "",
        md_table(["peer", "events/s", "streams/s", "first event p50 ms", "hop CPU ms/stream"],
                 stream_rows),
        "",
        "A load client on the same core as the backend limits the `direct` and `nginx` rows "
        "(the client, not nginx, is the bottleneck there: see hop CPU), so `÷ nginx` is a "
        "lower bound of the distance to the physical limit.",
        "",
    ]
    return "\n".join(parts)
