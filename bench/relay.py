"""The push relay's throughput and added latency, the durable queue against the relay
before it (issue 31: durability must not cost more than 2x per notification).

    python -m bench.relay [--rounds 2] [--scale 1] [--strict] [--md FILE|-]

`make bench` runs it inside `python -m bench.run` (its own section of bench/RESULTS.md,
its targets with the others'); alone it prints its figures and rewrites that section.

**The baseline.** The durable queue replaced the in-memory relay: the code has no
setting that delivers without storing. The closest honest baseline is that relay itself,
the commit before the queue (BASELINE below: the endpoint answered 202 and handed the
notification to a background delivery in the same process). Its `gateway` and
`translators` packages are taken with `git archive` into the run's temp dir and run
with the same venv (PYTHONPATH, as bench/cpu_per_call.py's `--baseline` does); the
seals, the relay token check, the translation and the replay marks in the store are the
same code in both. Without git or that commit, the baseline rows are missing (and the
targets N/A).

Per store (SQLite file; Redis when a redis-server is found, as bench/recording.py finds
it): one gateway of each relay, all started first; then rounds in which each store's two
gateways are loaded back to back (the load: bench/relay_load.py, its own process on
CPU 1 with redis-server; the gateways on CPU 0). Figures and ratios: bench/relay_report.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from bench import relay_report, report
from bench.peers import LOAD_CORE, MIDDLE_CORE
from bench.procs import PYTHON, ROOT, BenchError, Proc, Processes, free_port, gateway_cmd
from bench.recording_setup import redis_binary
from bench.relay_load import new_key
from bench.targets import RELAY_TARGETS, evaluate

HERE = Path(__file__).resolve().parent
SECTION = report.RELAY_SECTION
# 0c08c86^: the last commit whose relay delivered from memory (0c08c86 brought the queue).
BASELINE = "cbabf7f1c699b2771d36f49e670c8cee6afd1a8c"
# Notifications per round and gateway, before --scale; and each phase's bound in seconds.
SIZES = {"serial": 200, "warmup": 20, "tasks": 16, "per_task": 100, "timeout": 60.0}


def baseline_tree(into: Path) -> Path | None:
    """The baseline's packages, or None when git or the commit is not there."""
    into.mkdir()
    try:
        archive = subprocess.run(["git", "archive", BASELINE, "gateway", "translators"],
                                 cwd=ROOT, capture_output=True, timeout=60, check=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True,
                       capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return into


def gateway_config(port: int, key: str, state: dict[str, Any]) -> dict[str, Any]:
    # Tenant `t`'s agent speaks v0.3 and the client v1.0, so every notification is
    # relayed and translated; the agent itself is never asked (a v1.0 client gets the
    # notification's own task). Both relays accept this config; otherwise defaults.
    return {"listen": {"http": f"127.0.0.1:{port}"}, "workers": 1, "state": state,
            "tenants": {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}},
            "push_relay": {"keys": [key], "webhook_allowlist": ["127.0.0.1"]}}


def state_for(store: str, relay: str, logs: Path, redis_port: int | None,
              ) -> dict[str, Any]:
    if store == "sqlite":
        return {"path": str(logs / f"{relay}.db")}
    return {"backend": "redis", "url": f"redis://127.0.0.1:{redis_port}/0",
            "key_prefix": f"bench-{relay}:"}


def _start_gateway(processes: Processes, logs: Path, name: str, config: dict[str, Any],
                   tree: Path | None) -> Proc:
    path = logs / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    cmd, env = gateway_cmd(path), None
    if tree is not None:
        # -P: the working directory (this tree) must not come before PYTHONPATH.
        cmd = [str(PYTHON), "-P", "-c", "from gateway.cli import main; raise SystemExit(main())",
               "serve", "--config", str(path)]
        env = {"PYTHONPATH": str(tree)}
    return processes.start(name, ["taskset", "-c", MIDDLE_CORE, *cmd], config_port(config),
                           env=env)


def config_port(config: dict[str, Any]) -> int:
    return int(config["listen"]["http"].rpartition(":")[2])


def _load(spec: dict[str, Any]) -> dict[str, Any]:
    limit = 3 * spec["timeout"] + 60.0
    cmd = ["taskset", "-c", LOAD_CORE, sys.executable, "-m", "bench.relay_load",
           json.dumps(spec)]
    try:
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise BenchError(f"relay load still running after {limit:.0f} s") from None
    if done.returncode != 0:
        raise BenchError(f"relay load exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_relay(logs: Path, rounds: int = 3, scale: float = 1.0) -> dict[str, Any]:
    """Every round of every gateway; the data relay_report.markdown() and the targets
    read."""
    started = time.monotonic()
    sizes = {k: v if k == "timeout" else max(1, round(v * scale)) for k, v in SIZES.items()}
    sizes["warmup"] = min(sizes["warmup"], SIZES["warmup"])
    key = new_key()
    missing: list[str] = []
    out_rows: list[dict[str, Any]] = []
    with Processes(logs) as processes:
        tree = baseline_tree(logs / "baseline")
        if tree is None:
            missing.append(f"in-memory relay: commit {BASELINE[:7]} not found (git): no "
                           "baseline, no target checked")
        redis_port, watch_redis = None, {}
        binary = redis_binary()
        if binary is None:
            missing.append("redis: no redis-server (A2A_TEST_REDIS_SERVER or PATH)")
        else:
            redis_port = free_port()
            redis = processes.start("redis", ["taskset", "-c", LOAD_CORE, binary, "--port",
                                      str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                              "--appendonly", "no", "--dir", str(logs)],
                                    redis_port)
            watch_redis = {"redis": redis.pid}
        stores = [s for s in relay_report.STORES if s != "redis" or redis_port is not None]
        relays = [r for r in relay_report.RELAYS if r != "memory" or tree is not None]
        gateways: dict[tuple[str, str], Proc] = {}
        for store in stores:
            for relay in relays:
                config = gateway_config(free_port(), key,
                                        state_for(store, relay, logs, redis_port))
                gateways[(store, relay)] = _start_gateway(
                    processes, logs, f"gateway-{store}-{relay}", config,
                    tree if relay == "memory" else None)
        time.sleep(0.5)  # start-up work done before the first window
        for round_no in range(rounds):
            for store in stores:
                # The pair swaps places every round: neither always goes first.
                pair = relays if round_no % 2 == 0 else relays[::-1]
                for relay in pair:
                    gw = gateways[(store, relay)]
                    watch = {"gateway": gw.pid,
                             **(watch_redis if store == "redis" else {})}
                    raw = _load({**sizes, "gateway": f"http://127.0.0.1:{gw.port}",
                                 "key": key, "receiver_port": free_port(),
                                 "tag": f"r{round_no}", "watch": watch})
                    if not gw.alive():
                        raise BenchError(f"gateway {store}/{relay} died:\n{gw.log_tail()}")
                    row = {"store": store, "relay": relay, "round": round_no,
                           **relay_report.summarize(raw)}
                    out_rows.append(row)
                    print(f"  {store:<6} {relay:<7} round {round_no}: "
                          f"{row['accepted_per_s']:>6.0f} accepted/s "
                          f"{row['delivered_per_s']:>6.0f} delivered/s, p50 "
                          f"{row['load_p50_ms']:.2f} ms under load, "
                          f"{row['serial_p50_ms']:.2f} ms alone, "
                          f"{row['cpu_ms_per_notification']:.3f} ms CPU/notification, "
                          f"errors {row['errors']} {row['error_sample'] or ''}", flush=True)
    metrics = relay_report.derive(out_rows)
    return {"elapsed_s": time.monotonic() - started, "baseline": BASELINE, "sizes": sizes,
            "rows": out_rows, "missing": missing, "metrics": metrics,
            "targets": evaluate(metrics, RELAY_TARGETS)}


def print_summary(data: dict[str, Any]) -> None:
    print(report.text_table(relay_report.COLUMNS, relay_report.rows(data), left=3))
    for line in relay_report.recorded(data["metrics"]):
        print(f"recorded: {line}")
    for note in data["missing"]:
        print(f"missing: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.relay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="each gateway loaded this many times, the pairs in turn (ratios: the median of the rounds')")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the notification counts (0.1 for a smoke run)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS.md",
                        help="markdown file whose push-relay section is rewritten ('-': none)")
    args = parser.parse_args(argv)
    print(f"push relay: gateways on CPU {MIDDLE_CORE}, agents, receiver and redis on CPU "
          f"{LOAD_CORE}", flush=True)
    return report.run_section(
        "relay", lambda logs: run_relay(logs, args.rounds, args.scale), _summary_and_targets,
        args.md, SECTION, relay_report.markdown, args.strict)


def _summary_and_targets(data: dict[str, Any]) -> None:
    print_summary(data)
    for t in data["targets"]:
        if t["status"] != "N/A":
            print(f"{t['status']:<5} {t['why']} ({t['value']:.2f})")


if __name__ == "__main__":
    raise SystemExit(main())
