"""Instructions per call of the middle hop, counted by valgrind (its run is not part of
`make bench`; bench/recording_instructions.py, which is, counts with its helpers).

    .venv/bin/python -m bench.instructions_per_call [--duration 8] [--baseline DIR ...]

CPU time per call (bench/cpu_per_call.py) moves by ±30% on a shared machine, more than
most single optimizations save. The user-space instructions a process executes per call
do not: each hop runs under `valgrind --tool=callgrind` (about 50 times slower, so a few
hundred calls per path), its counters are zeroed after a warm-up, a fixed-time load of 4
connections runs (bench/fastload.py), and the counters are dumped: instructions ÷
answers. Repeated runs agree within ~0.5%. Kernel time (socket syscalls) is not counted,
which is the same for every gateway version; the bare aiohttp proxy is the reference.

Paths as in bench/cpu_per_call.py; `--baseline DIR` runs a gateway from another source
tree (`git archive <commit> | tar -x -C DIR`) for a before/after from one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench import nginx
from bench.cpu_per_call import PATHS
from bench.peers import Run, _load, _spec, gateway_config
from bench.procs import PYTHON, Processes, free_port, plain_proxy_cmd

_GATEWAY = "from gateway.cli import main; raise SystemExit(main())"


def valgrind_cmd(out: Path, cmd: list[str]) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=yes",
            f"--callgrind-out-file={out}.%p", *cmd]


def _control(pid: int, what: str) -> None:
    subprocess.run(["callgrind_control", what, str(pid)], check=True, capture_output=True)


def _totals(out: Path, pid: int, after: float) -> int:
    """The instructions of the newest dump of ``pid`` (written after ``after``)."""
    for _ in range(100):
        dumps = [p for p in out.parent.glob(f"{out.name}.{pid}*") if p.stat().st_mtime >= after]
        for dump in sorted(dumps, key=lambda p: p.stat().st_mtime, reverse=True):
            for line in dump.read_text(errors="replace").splitlines():
                if line.startswith(("totals:", "summary:")):
                    return int(line.split()[1])
        time.sleep(0.2)
    raise RuntimeError(f"no callgrind dump of {pid}")


def _load_for(spec: dict[str, Any], seconds: float) -> dict[str, Any]:
    # 4 connections: under valgrind the hop is ~50 times slower, more would only queue.
    return _load({**spec, "warmup": 0.0, "duration": seconds, "connections": 4}, cores=None)


def warm_up(spec: dict[str, Any], seconds: float = 2.0) -> None:
    """Calls before counting: imports, caches and connections settle first."""
    _load_for(spec, seconds)


def count(pid: int, out: Path, spec: dict[str, Any], duration: float,
          settle: float = 1.5) -> tuple[int, int]:
    """(answers, instructions) of one fixed-time load (``spec``: bench/fastload.py's),
    counted until ``settle`` seconds after it: the work its last answers leave done."""
    _control(pid, "-z")
    result = _load_for(spec, duration)
    time.sleep(settle)
    began = time.time()
    _control(pid, "-d")
    if result["errors"]:
        raise RuntimeError(f"{spec['path']}: {result['errors']} errors: "
                           f"{result['error_sample']}")
    return int(result["ok"]), _totals(out, pid, began - 1)


# What to start under valgrind: name -> (command, port, extra environment).
Starts = dict[str, tuple[list[str], int, dict[str, str]]]


def add_gateways(starts: Starts, out: Path, logs: Path, trees: list[tuple[str, Path | None]],
                 stub: int, echo: int) -> None:
    """A gateway under valgrind per source tree (None: this one), bench.peers' config."""
    for name, tree in trees:
        port = free_port()
        config = logs / f"{name}.yaml"
        config.write_text(yaml.safe_dump(gateway_config(port, stub, echo), sort_keys=False))
        starts[name] = (gateway_under_valgrind(out, config), port,
                        {"PYTHONPATH": str(tree.resolve())} if tree else {})


def start_all(procs: Processes, starts: Starts) -> dict[str, tuple[int, int]]:
    """Start them all at once (under valgrind a start takes about a minute): name ->
    (pid, port)."""
    with ThreadPoolExecutor(len(starts)) as pool:
        started = {name: pool.submit(procs.start, name, cmd, port, 600.0, env)
                   for name, (cmd, port, env) in starts.items()}
        return {name: (f.result().pid, starts[name][1]) for name, f in started.items()}


def gateway_under_valgrind(out: Path, config: Path) -> list[str]:
    # -P: the working directory (this tree) must not come before PYTHONPATH.
    return valgrind_cmd(out, [str(PYTHON), "-P", "-c", _GATEWAY, "serve", "--config",
                              str(config)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions_per_call",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--baseline", action="append", default=[], type=Path)
    parser.add_argument("--paths", default="same,10-03,03-10")
    args = parser.parse_args(argv)
    binary, note = nginx.ensure_nginx()
    if binary is None or shutil.which("valgrind") is None:
        print(f"instructions_per_call: needs nginx ({note}) and valgrind", file=sys.stderr)
        return 2
    logs, prefix = nginx.run_dir("instructions")
    ports = {"stub": free_port(), "echo": free_port()}
    out = logs / "callgrind.out"
    rows: list[tuple[str, str, int, int]] = []
    with Processes(logs) as procs:
        procs.start("echo-stub", [sys.executable, "-m", "bench.echo_stub", "--port",
                                  str(ports["echo"])], ports["echo"])
        procs.start("nginx-stub", nginx.nginx_cmd(binary, prefix, nginx.stub_conf(
            prefix, ports["stub"])), ports["stub"])
        trees: list[tuple[str, Path | None]] = [("gw", None)]
        trees += [(f"base{i}" if len(args.baseline) > 1 else "base", d)
                  for i, d in enumerate(args.baseline)]
        starts: Starts = {}
        port = free_port()
        starts["bare"] = (valgrind_cmd(out, plain_proxy_cmd(port, {
            "t10": f"http://127.0.0.1:{ports['stub']}/v10"})), port, {})
        add_gateways(starts, out, logs, trees, ports["stub"], ports["echo"])
        hops = start_all(procs, starts)
        plan = [("bare", "bare")] + [(name, PATHS[p]) for p in args.paths.split(",")
                                     for name, _ in trees]
        for hop, peer in plan:
            pid, port = hops[hop]
            spec = _spec(Run("tput", peer, "asyncio"), port, {})
            warm_up(spec)
            calls, instructions = count(pid, out, spec, args.duration)
            rows.append((hop, peer, calls, instructions))
            print(f"{hop + ':' + peer:<16} {calls:6d} calls  {instructions / calls / 1e6:7.3f} "
                  f"M instructions per call", flush=True)
    per_call = {f"{h}:{p}": i / c for h, p, c, i in rows}
    bare_cost = per_call["bare:bare"]
    print("\nM instructions per call (÷ bare aiohttp proxy):")
    for key, value in per_call.items():
        print(f"  {key:<16} {value / 1e6:7.3f}  ({value / bare_cost:.2f} x bare)")
    print(json.dumps(per_call))
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
