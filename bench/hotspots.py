"""Profile the gateway on one path with cProfile (not part of `make bench`).

    .venv/bin/python -m bench.hotspots [--route gw-10-03] [--requests 3000] [--top 25]

Starts the backend and the gateway under cProfile (bench/profiled_gateway.py) on
127.0.0.1, sends the route's unary load (16 in flight, bounded in count and time), stops the
gateway with SIGTERM (cProfile writes its stats on the way out) and prints the
functions with the most own time and the gateway/translators functions with the most
cumulative time. cProfile slows call-heavy code more than the rest: read the shares,
not the absolute times.
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from bench.procs import (
    PYTHON,
    ROOT,
    BenchError,
    Processes,
    demo_backend_cmd,
    free_port,
    sdk_agent_cmd,
)
from bench.run import gateway_config
from bench.scenarios import BY_NAME, Group, Scenario, group_spec


def _print_stats(stats_file: Path, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    out.write("\n=== gateway/ and translators/ functions by cumulative time ===\n")
    pstats.Stats(str(stats_file), stream=out).sort_stats("cumulative").print_stats(
        str(ROOT) + r"/(gateway|translators)/", top)
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hotspots", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", default="gw-10-03",
                        choices=[r for r in BY_NAME if r.startswith("gw-")])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, help="keep the cProfile stats file here")
    parser.add_argument("--timer", choices=["cpu", "wall"], default="cpu",
                        help="profile in process CPU time (default) or wall-clock time")
    args = parser.parse_args(argv)
    route = BY_NAME[args.route]
    logs = Path(tempfile.mkdtemp(prefix="a2a-bench-profile-"))
    ports = {"d03": free_port(), "s10": free_port(), "plain": 0, "gw": free_port()}
    stats_file = args.out or logs / "gateway.prof"
    group = Group("profile", "unary", 16, 1, args.requests, 200, 60.0, (route.name,))
    scenario = Scenario(group, route, args.requests, 200)
    try:
        with Processes(logs) as processes:
            if route.backend == "s10":
                processes.start("sdk-agent-v10", sdk_agent_cmd(ports["s10"]), ports["s10"],
                                timeout=90)
            else:
                processes.start("demo-agent", demo_backend_cmd(ports["d03"]), ports["d03"])
            config = logs / "gateway.yaml"
            config.write_text(yaml.safe_dump(gateway_config(ports), sort_keys=False))
            gateway = processes.start("gateway", [
                str(PYTHON), "-m", "bench.profiled_gateway", str(stats_file), str(config),
                args.timer], ports["gw"])
            spec = group_spec(group, [scenario], ports, {"gw": gateway.pid}, 90.0)
            load = subprocess.run([sys.executable, "-m", "bench.load", json.dumps(spec)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=240)
            if load.returncode != 0:
                raise BenchError(f"load client exited {load.returncode}:\n{load.stderr}")
            result = json.loads(load.stdout)["jobs"][scenario.id]
            processes.stop(gateway, timeout=30)
    except BenchError as exc:
        print(f"bench.hotspots: {exc}", file=sys.stderr)
        return 2
    print(f"{scenario.id} under cProfile: {result['ok']}/{result['sent']} ok, "
          f"{result['rps']:.0f} req/s, p50 {result['p50_ms']:.2f} ms, gateway CPU "
          f"{result['cpu_s'].get('gw', 0):.2f} s\n")
    if not stats_file.exists():
        print(f"bench.hotspots: no stats written to {stats_file}", file=sys.stderr)
        return 2
    _print_stats(stats_file, args.top)
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
