"""CPU per call of the middle hop, quick and repeatable (not part of `make bench`).

    .venv/bin/python -m bench.cpu_per_call [--rounds 3] [--duration 3] [--baseline DIR ...]

The peers' setup (bench/peers.py) reduced to one number per path: the middle hop pinned
to CPU 0, the load client (bench/fastload.py, 32 connections) and the fixed-answer
backends (nginx stub, echo stub) on CPU 1; CPU per call = the hop's utime + stime over
the measured window ÷ answers. Paths: `bare` (bare aiohttp proxy → nginx stub),
`same` (v1.0 JSON-RPC → gateway → v1.0 nginx stub, forwarded as sent), `10-03` (v1.0
client → gateway → v0.3 echo stub) and `03-10` (v0.3 client → v1.0 echo stub).

`--baseline DIR` (repeatable) also runs a gateway from another source tree (e.g. `git
archive <commit> | tar -x -C DIR`) with the same venv, PYTHONPATH=DIR, so a before/after
comparison comes from one run. Rounds interleave every hop; the minimum over rounds is
reported, because on a shared machine noise only adds CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml

from bench import nginx
from bench.peers import Run, _load, _pinned, _spec, gateway_config
from bench.procs import PYTHON, Processes, free_port, gateway_cmd, plain_proxy_cmd

PATHS = {"same": "gw-same", "10-03": "gw-10-03", "03-10": "gw-03-10"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_per_call", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--baseline", action="append", default=[], type=Path)
    parser.add_argument("--paths", default="same,10-03,03-10")
    parser.add_argument("--loop", default="asyncio")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare proxy")
    args = parser.parse_args(argv)
    binary, note = nginx.ensure_nginx()
    if binary is None:
        print(f"cpu_per_call: nginx missing: {note}", file=sys.stderr)
        return 2
    logs, prefix = nginx.run_dir("cpu-per-call")
    ports = {"stub": free_port(), "echo": free_port(), "bare": free_port()}
    env = {"A2A_GATEWAY_LOOP": args.loop}
    results: dict[str, list[float]] = {}
    with Processes(logs) as procs:
        procs.start("echo-stub", ["taskset", "-c", "1", sys.executable, "-m", "bench.echo_stub",
                                  "--port", str(ports["echo"])], ports["echo"])
        procs.start("nginx-stub", ["taskset", "-c", "1", *nginx.nginx_cmd(
            binary, prefix, nginx.stub_conf(prefix, ports["stub"]))], ports["stub"])
        hops = {"bare": procs.start("bare", _pinned(plain_proxy_cmd(ports["bare"], {
            "t10": f"http://127.0.0.1:{ports['stub']}/v10"})), ports["bare"], env=env)}
        hop_ports = {"bare": ports["bare"]}
        trees: list[tuple[str, Path | None]] = [("gw", None)]
        trees += [(f"base{i}" if len(args.baseline) > 1 else "base", d)
                  for i, d in enumerate(args.baseline)]
        for name, tree in trees:
            port = free_port()
            config = logs / f"{name}.yaml"
            config.write_text(yaml.safe_dump(gateway_config(port, ports["stub"], ports["echo"]),
                                             sort_keys=False))
            cmd = gateway_cmd(config) if tree is None else [
                # -P: the working directory (this tree) must not come before PYTHONPATH.
                str(PYTHON), "-P", "-c", "from gateway.cli import main; raise SystemExit(main())",
                "serve", "--config", str(config)]
            genv = {**env, "PYTHONPATH": str(tree.resolve())} if tree else env
            hops[name] = procs.start(name, _pinned(cmd), port, env=genv)
            hop_ports[name] = port
        time.sleep(0.5)
        # A path's hops back to back: whatever else the machine does then falls on all.
        plan = [] if args.no_bare else [("bare", "bare")]
        plan += [(name, PATHS[p]) for p in args.paths.split(",") for name, _ in trees]
        n_gw = len(trees) * len(args.paths.split(","))
        for rnd in range(args.rounds):
            # The trees swap places every round: neither always runs first on a path.
            order = plan
            if rnd % 2:
                order = plan[:len(plan) - n_gw] + [(name, PATHS[p])
                                                   for p in args.paths.split(",")
                                                   for name, _ in reversed(trees)]
            for hop, peer in order:
                spec = _spec(Run("tput", peer, args.loop), hop_ports[hop],
                             {"hop": hops[hop].pid})
                spec["warmup"], spec["duration"] = 0.5, args.duration
                load = _load(spec)
                if load["ok"] == 0 or load["errors"]:
                    print(f"{hop} {peer}: errors {load['errors']}: {load['error_sample']}",
                          file=sys.stderr)
                    return 2
                ms = load["cpu_s"]["hop"] / load["ok"] * 1000
                util = load["cpu_s"]["hop"] / load["wall_s"]
                key = f"{hop}:{peer}"
                results.setdefault(key, []).append(ms)
                print(f"round {rnd + 1} {key:<16} {load['rps']:7.0f} req/s  {ms:.3f} ms/req "
                      f" hop CPU {util:4.0%}", flush=True)
    print("\nmin over rounds (ms CPU per request):")
    for key, values in results.items():
        print(f"  {key:<16} {min(values):.3f}   (all: {', '.join(f'{v:.3f}' for v in values)})")
    if args.baseline:  # paired by round: the noise of one moment falls on both
        first = trees[1][0]
        print(f"\ngw ÷ {first}, per round (median of the rounds' ratios):")
        for p in args.paths.split(","):
            ratios = sorted(g / b for g, b in zip(results[f"gw:{PATHS[p]}"],
                                                  results[f"{first}:{PATHS[p]}"], strict=True))
            print(f"  {PATHS[p]:<14} {statistics.median(ratios):.3f}   "
                  f"(all: {', '.join(f'{r:.3f}' for r in ratios)})")
    print(json.dumps({k: min(v) for k, v in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
