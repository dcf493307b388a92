"""Workers: the gateway as one process and as two workers (`workers: 2`), same load.

Part of `python -m bench.run` (issue 14: "with 2 workers, throughput ≥ 1.7x one
worker"); alone: `python -m bench.workers [--duration S] [--loop asyncio|uvloop]`.

The translated unary path of the peer comparison (v0.3 JSON-RPC client → gateway → v1.0
JSON-RPC echo stub, bench/echo_stub.py, 32 connections, bench/fastload.py) is measured
through `workers: 1` and then `workers: 2`. A 2-core machine has no core left for the
load client and the stub once two workers run, so nothing is pinned and the load client
and the stub take their share of the same two cores: the throughput ratio is a floor of
what two workers give with cores of their own. CPU per request (utime + stime of the
supervisor and its workers over the measured window ÷ answers) does not depend on what
else runs, so it says whether a worker costs more per request than the single process:
the ratio two workers would reach, each on a core of its own, is 2 x (CPU per request
with 1 worker ÷ with 2 workers).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import peers
from bench.procs import BenchError, Proc, Processes, free_port, gateway_cmd

WORKERS = (1, 2)
ROUNDS = 3  # 1 worker, 2 workers, alternating: a slow window falls on both alike
PEER = "gw-03-10"  # the translated path: what costs the gateway most


def run_id(workers: int) -> str:
    return f"workers:tput:{workers}w"


def worker_pids(supervisor: int) -> list[int]:
    """The supervisor's child processes (its workers), from /proc."""
    pids: list[int] = []
    for task in Path(f"/proc/{supervisor}/task").iterdir():
        pids += [int(x) for x in (task / "children").read_text().split()]
    return sorted(pids)


def _start(processes: Processes, logs: Path, loop: str, workers: int, port: int,
           echo: int) -> Proc:
    config = peers.gateway_config(port, echo, echo)
    config["workers"] = workers
    path = logs / f"workers-{workers}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    gw = processes.start(f"gateway-{workers}w", gateway_cmd(path), port,
                         env={"A2A_GATEWAY_LOOP": loop})
    deadline = time.monotonic() + 30
    while workers > 1 and len(worker_pids(gw.pid)) < workers:
        if time.monotonic() > deadline or not gw.alive():
            raise BenchError(f"{gw.name}: {workers} workers did not start:\n{gw.log_tail()}")
        time.sleep(0.1)
    return gw


def _round(gw: Proc, port: int, workers: int, loop: str, timing: peers.Timing,
           ) -> dict[str, Any]:
    split = {f"worker{i}": pid for i, pid in enumerate(worker_pids(gw.pid))} \
        if workers > 1 else {}
    spec = peers._spec(peers.Run("tput", PEER, loop), port, {"gw": gw.pid, **split})
    spec["warmup"], spec["duration"] = timing.warmup, timing.duration
    load = peers._load(spec, cores=None)
    if not gw.alive():
        raise BenchError(f"{gw.name} died during the load:\n{gw.log_tail()}")
    if load["ok"] == 0:
        raise BenchError(f"{run_id(workers)}: no answer right; first error: "
                         f"{load['error_sample']}")
    load["split_cpu_s"] = [load["cpu_s"][k] for k in sorted(split)]
    return dict(load)


def _pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one configuration as one measurement."""
    ok, wall = sum(r["ok"] for r in rounds), sum(r["wall_s"] for r in rounds)
    cpu = sum(r["cpu_s"]["gw"] for r in rounds)
    split = [sum(x) for x in zip(*(r["split_cpu_s"] for r in rounds), strict=True)]
    return {"ok": ok, "errors": sum(r["errors"] for r in rounds), "wall_s": wall,
            "rps": ok / wall, "rps_rounds": [round(r["rps"]) for r in rounds],
            "cpu_ms_per_req": cpu / ok * 1000, "gw_cores": cpu / wall,
            "worker_cpu_share": [round(x / cpu, 3) for x in split] if cpu else []}


def run_workers(logs: Path, loop: str, only: str = "",
                timing: peers.Timing | None = None) -> dict[str, Any]:
    """Measure 1 and 2 workers, alternating ROUNDS times (so that whatever else the
    machine does falls on both alike); the dict bench.run stores under "workers"."""
    timing = timing or peers.TIMINGS["tput"]
    todo = [n for n in WORKERS if re.search(only, run_id(n))]
    ports = {"echo": free_port(), **{f"gw{n}": free_port() for n in todo}}
    rounds: dict[int, list[dict[str, Any]]] = {n: [] for n in todo}
    with Processes(logs) as processes:
        processes.start("workers-echo-stub", [sys.executable, "-m", "bench.echo_stub",
                                              "--port", str(ports["echo"])], ports["echo"])
        gateways = {n: _start(processes, logs, loop, n, ports[f"gw{n}"], ports["echo"])
                    for n in todo}
        time.sleep(1.0)  # every worker listening, not only the first
        for _ in range(ROUNDS):
            for n, gw in gateways.items():
                rounds[n].append(_round(gw, ports[f"gw{n}"], n, loop, timing))
        for gw in gateways.values():
            code = processes.stop(gw)
            if code != 0:
                raise BenchError(f"{gw.name} exited {code} on SIGTERM:\n{gw.log_tail()}")
    results = []
    for n in todo:
        load = _pooled(rounds[n])
        results.append({"id": run_id(n), "workers": n, "load": load})
        print(f"  {run_id(n):<20} {load['rps']:>8.0f} req/s {load['rps_rounds']}  gateway "
              f"CPU {load['gw_cores']:.2f} cores, {load['cpu_ms_per_req']:.3f} ms/req  split "
              f"{load['worker_cpu_share'] or '-'}  errors {load['errors']}", flush=True)
    return {"skipped": not results, "loop": loop, "results": results, "rounds": ROUNDS,
            "timing": {"warmup": timing.warmup, "duration": timing.duration}}


def derive(data: dict[str, Any]) -> dict[str, float]:
    """The flat metrics `workers:*` that bench/targets.py reads."""
    by_n = {r["workers"]: r["load"] for r in data.get("results", [])}
    m: dict[str, float] = {}
    for n, load in by_n.items():
        for key in ("rps", "cpu_ms_per_req", "gw_cores", "errors"):
            m[f"{run_id(n)}.{key}"] = float(load[key])
    one, two = by_n.get(1), by_n.get(2)
    if one and two:
        m["workers:tput.scaling"] = two["rps"] / one["rps"]
        m["workers:tput.cpu_per_req_ratio"] = one["cpu_ms_per_req"] / two["cpu_ms_per_req"]
        m["workers:tput.scaling_on_own_cores"] = 2 * m["workers:tput.cpu_per_req_ratio"]
    return m


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def markdown(data: dict[str, Any], metrics: dict[str, float],
             checks: list[dict[str, Any]]) -> str:
    """The workers section of bench/RESULTS.md."""
    from bench.report import md_table
    if data.get("skipped", True):
        return "## Workers: one process and two\n\nNot measured (--skip-workers or --only).\n"
    rows = [[str(r["workers"]), _f(r["load"]["rps"], 0),
             ", ".join(str(x) for x in r["load"].get("rps_rounds", [])),
             _f(r["load"]["cpu_ms_per_req"], 3),
             _f(r["load"]["gw_cores"], 2),
             " / ".join(f"{s:.0%}" for s in r["load"]["worker_cpu_share"]) or "-",
             str(r["load"]["errors"])] for r in data["results"]]
    timing = data["timing"]
    return "\n".join([
        "## Workers: one process and two",
        "",
        f"The translated path of the peers (`{PEER}`: {peers.PEERS[PEER].description}), "
        f"{peers.CONNECTIONS} connections, through `workers: 1` and `workers: 2` in turn, "
        f"{data.get('rounds', 1)} rounds each of {timing['warmup']:g} s warm-up then "
        f"{timing['duration']:g} s measured, pooled (`{data['loop']}`). Nothing is pinned: on this 2-core machine the load client and "
        "the echo stub share both cores with the workers, so the throughput ratio is a floor "
        "of what two workers give with cores of their own. `gateway CPU` = utime+stime of "
        "the supervisor and its workers over the measured window, per request and in cores "
        "used; `split` = each worker's share of that CPU (the kernel spreads connections "
        "over the workers by a hash, SO_REUSEPORT).",
        "",
        md_table(["workers", "req/s", "req/s by round", "gateway CPU ms/req",
                  "gateway CPU (cores)",
                  "split", "errors"], rows),
        "",
        md_table(["measure", "value", "target"], readme_rows(metrics, checks), left=1),
        "",
    ])


def readme_rows(metrics: dict[str, float], checks: list[dict[str, Any]]) -> list[list[str]]:
    """The workers' lines of the README table: measure, value, target."""
    status = {c["metric"]: f"{c['status']} (target {c['op']} {c['limit']:g})" for c in checks}
    g = metrics.get
    return [
        ["req/s, translated, 1 worker / 2 workers (2 cores shared with the load)",
         f"{_f(g(run_id(1) + '.rps'), 0)} / {_f(g(run_id(2) + '.rps'), 0)}", "recorded"],
        ["throughput, 2 workers ÷ 1 (load client and stub on the same cores: a floor)",
         _f(g("workers:tput.scaling"), 2), "recorded"],
        ["gateway CPU per request, 1 worker / 2 workers (ms)",
         f"{_f(g(run_id(1) + '.cpu_ms_per_req'), 3)} / "
         f"{_f(g(run_id(2) + '.cpu_ms_per_req'), 3)}", "recorded"],
        ["2 x (CPU per request, 1 worker ÷ 2 workers): throughput ratio with a core per "
         "worker and the load elsewhere", _f(g("workers:tput.scaling_on_own_cores"), 2),
         status.get("workers:tput.scaling_on_own_cores", "")],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loop", choices=peers.LOOPS, default="asyncio")
    parser.add_argument("--duration", type=float, default=peers.TIMINGS["tput"].duration,
                        help="seconds measured per round (after a 1 s warm-up)")
    args = parser.parse_args(argv)
    timing = peers.Timing(1.0, args.duration, peers.CONNECTIONS)
    with tempfile.TemporaryDirectory(prefix="a2a-bench-workers-") as logs:
        try:
            data = run_workers(Path(logs), args.loop, timing=timing)
        except BenchError as exc:
            print(f"bench.workers: the run broke: {exc}", file=sys.stderr)
            return 2
    metrics = derive(data)
    print(json.dumps({k: round(v, 3) for k, v in metrics.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
