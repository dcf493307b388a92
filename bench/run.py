"""`make bench`: the gateway against a direct call and a plain reverse proxy, in one run.

First the peer comparison (bench/peers.py): the middle hop alone on CPU 0 (nginx as a
reverse proxy, the bare aiohttp pass-through, the gateway same-dialect and translating),
the load client and a fixed-answer backend (nginx `return 200`, bench/echo_stub.py) on
CPU 1; `--loop` picks the event loop of the gateway and the bare proxy (the other loop is
measured too, for throughput, unless `--one-loop`). Then the gateway with one and with two
worker processes (bench/workers.py). Then the groups below, with real backends and
shared cores. Then the push relay (bench/relay.py), the stream journal on vs off
(bench/journal.py) and migration mode (bench/migration.py), each pinned as the peers are.

Starts on 127.0.0.1, as real processes: the demo agent (v0.3 JSON-RPC, bench/backend.py),
the official a2a-sdk 1.3.0 agent (v1.0, tests/interop/peers/agent_v10.py), the plain
reverse proxy (bench/plain_proxy.py) and the gateway (`a2a-gateway serve` with a
generated config). Then runs the scenarios of bench/scenarios.py, a load client process
(bench/load.py) per group, reads the gateway's CPU time and memory from /proc,
and reports per scenario requests/s, p50/p95/p99 and the ratios gateway ÷ direct and
gateway ÷ plain proxy, then PASS/FAIL for every target of bench/targets.py.

Writes bench/last-run.json (everything, git-ignored) and bench/RESULTS.md (the summary
to commit). Exit status: 0, even when targets are missed; 1 with --strict and a missed
target; 2 when the run itself broke (a process did not start or died, a load client
crashed, a scenario got no answer right).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench import (
    journal,
    journal_report,
    migration,
    migration_report,
    peers,
    peers_report,
    relay,
    relay_report,
    report,
    workers,
)
from bench.procs import (
    ROOT,
    BenchError,
    Proc,
    Processes,
    demo_backend_cmd,
    free_port,
    gateway_cmd,
    plain_proxy_cmd,
    sdk_agent_cmd,
)
from bench.scenarios import GROUPS, Group, Scenario, group_spec, scenarios
from bench.targets import (
    JOURNAL_TARGETS,
    MIGRATION_TARGETS,
    RELAY_TARGETS,
    Target,
    evaluate,
)

HERE = Path(__file__).resolve().parent


def gateway_config(ports: dict[str, int]) -> dict[str, Any]:
    """Default settings; only the listener, the two tenants and one process are set (the
    memory figures are one process's; bench/workers.py measures workers)."""
    return {
        "workers": 1,
        "listen": {"http": f"127.0.0.1:{ports['gw']}"},
        "tenants": {
            "d03": {"backend": {"url": f"http://127.0.0.1:{ports['d03']}/",
                                "version": "0.3", "binding": "JSONRPC"}},
            "s10": {"backend": {"url": f"http://127.0.0.1:{ports['s10']}/",
                                "version": "1.0", "binding": "JSONRPC"}},
        },
        "default_tenant": "d03",
    }


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.partition(":")[2].strip()
            break
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "aiohttp": aiohttp.__version__,
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "commit": commit or "unknown",
    }


# Each group's share of the time budget; what a group leaves unused goes to the next.
BUDGET_SHARE = {"lat": 0.2, "tput": 0.5, "stream": 0.3}


def run_group(group: Group, todo: list[Scenario], ports: dict[str, int],
              watch: dict[str, int], deadline: float) -> dict[str, Any]:
    spec = group_spec(group, todo, ports, watch, deadline)
    hard_limit = deadline + group.time_cap + 10.0 + 2 * spec["request_timeout"] + 15.0
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.load", json.dumps(spec)],
                              cwd=ROOT, capture_output=True, text=True, timeout=hard_limit)
    except subprocess.TimeoutExpired:
        raise BenchError(f"group {group.name}: load client still running after "
                         f"{hard_limit:.0f}s") from None
    if proc.returncode != 0:
        raise BenchError(f"group {group.name}: load client exited {proc.returncode}:\n"
                         f"{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def run_groups(procs: dict[str, Proc], ports: dict[str, int], todo: list[Scenario],
               budget: float, memory: dict[str, float]) -> tuple[list[dict[str, Any]],
                                                               list[str]]:
    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    watch = {name: p.pid for name, p in procs.items()}
    spare = 0.0
    for group in GROUPS:
        mine = [s for s in todo if s.group is group]
        if not mine:
            continue
        deadline = BUDGET_SHARE[group.name] * budget + spare
        began = time.monotonic()
        print(f"{group.name}: {len(mine)} scenarios x {group.rounds} rounds, "
              f"{group.concurrency} in flight", flush=True)
        out = run_group(group, mine, ports, watch, deadline)
        spare = max(0.0, deadline - (time.monotonic() - began))
        skipped += out["skipped"]
        for name, proc in procs.items():
            if not proc.alive():
                raise BenchError(f"{name} died during group {group.name}:\n{proc.log_tail()}")
        if "warm_mb" not in memory and any(s.route.hop == "gw" for s in mine):
            memory["warm_mb"] = procs["gw"].memory_mb()["VmRSS"]
        for scenario in mine:
            load = out["jobs"].get(scenario.id)
            if load is None:
                continue
            if load["ok"] == 0:
                raise BenchError(f"{scenario.id}: no request answered right; first error: "
                                 f"{load['error_sample']}")
            results.append({"id": scenario.id, "group": group.name,
                            "route": scenario.route.name, "concurrency": group.concurrency,
                            "load": load, "cpu": load["cpu_s"]})
            print(f"  {scenario.id:<22} {load['ok']:>5}/{load['sent']:<5} "
                  f"{load['rps']:>8.0f} req/s  p50 {load['p50_ms']:>7.2f} ms  "
                  f"p99 {load['p99_ms']:>7.2f} ms  rounds {load['rps_rounds']}", flush=True)
    return results, skipped


def run_peers(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    if args.skip_peers:
        return {"skipped": True, "nginx": "not run (--skip-peers)", "results": []}
    other = None if args.one_loop else next(x for x in peers.LOOPS if x != args.loop)
    if "uvloop" in (args.loop, other) and not peers.ensure_uvloop():
        if args.loop == "uvloop":
            raise BenchError("--loop uvloop: uvloop is not installed and cannot be")
        print("peers: uvloop cannot be installed; measuring asyncio only", flush=True)
        other = None
    print(f"peers: middle hop on CPU {peers.MIDDLE_CORE}, load client and stubs on CPU "
          f"{peers.LOAD_CORE}; loop {args.loop}" + (f" (and {other})" if other else ""),
          flush=True)
    return peers.run_peers(logs / "peers", args.loop, other, args.only, args.peer_rounds)


def run_workers(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    if args.skip_workers:
        return {"skipped": True, "results": []}
    print(f"workers: the translated path through 1 and 2 workers, nothing pinned; loop "
          f"{args.loop}", flush=True)
    return workers.run_workers(logs / "workers", args.loop, args.only)


def run_relay(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """The push relay, durable queue vs in-memory (bench/relay.py, about 2 minutes)."""
    # --only selects by name: a pattern that does not match "relay" leaves it out.
    if args.skip_relay or not re.search(args.only, "relay"):
        return {"skipped": True, "rows": []}
    print("push relay: the durable queue vs the in-memory relay, SQLite and Redis; "
          f"gateways on CPU {peers.MIDDLE_CORE}", flush=True)
    (logs / "relay").mkdir()
    return relay.run_relay(logs / "relay", scale=args.scale)


def run_journal(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """The stream journal on vs off, and a resume (bench/journal.py, about 90 s)."""
    if args.skip_journal or not re.search(args.only, "journal"):
        return {"skipped": True, "rows": []}
    print(f"stream journal: on vs off, gateways on CPU {peers.MIDDLE_CORE}; loop "
          f"{args.loop}", flush=True)
    (logs / "journal").mkdir()
    return journal.run_journal(logs / "journal", args.loop, scale=args.scale)


def run_migration(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """A tenant without a migration, off, canary and shadow (bench/migration.py, about
    2 minutes)."""
    if args.skip_migration or not re.search(args.only, "migration"):
        return {"skipped": True, "rows": []}
    print(f"migration mode: none, off, canary, shadow; gateways on CPU {peers.MIDDLE_CORE}; "
          f"loop {args.loop}", flush=True)
    (logs / "migration").mkdir()
    return migration.run_migration(logs / "migration", args.loop, scale=args.scale)


def run_real(args: argparse.Namespace, logs: Path,
             ) -> tuple[list[dict[str, Any]], list[str], dict[str, float]]:
    """The groups of bench/scenarios.py: real backends, cores shared."""
    ports = {"d03": free_port(), "s10": free_port(), "plain": free_port(), "gw": free_port()}
    todo = [s for s in scenarios(args.scale) if re.search(args.only, s.id)]
    print(f"a2a-gateway bench: {len(todo)} scenarios, logs in {logs}", flush=True)
    with Processes(logs) as processes:
        procs = {
            "s10": processes.start("sdk-agent-v10", sdk_agent_cmd(ports["s10"]),
                                   ports["s10"], timeout=90),
            "d03": processes.start("demo-agent", demo_backend_cmd(ports["d03"]), ports["d03"]),
            "plain": processes.start("plain-proxy", plain_proxy_cmd(ports["plain"], {
                "d03": f"http://127.0.0.1:{ports['d03']}/",
                "s10": f"http://127.0.0.1:{ports['s10']}/"}), ports["plain"]),
        }
        config = logs / "gateway.yaml"
        config.write_text(yaml.safe_dump(gateway_config(ports), sort_keys=False))
        procs["gw"] = processes.start("gateway", gateway_cmd(config), ports["gw"])
        time.sleep(1.0)  # let start-up allocations settle before the idle reading
        memory: dict[str, float] = {"start_mb": procs["gw"].memory_mb()["VmRSS"]}
        results, skipped = run_groups(procs, ports, todo, args.budget, memory)
        final = procs["gw"].memory_mb()
        memory["end_mb"], memory["peak_mb"] = final["VmRSS"], final["VmHWM"]
        memory["growth_mb"] = memory["end_mb"] - memory["start_mb"]
        if "warm_mb" in memory:
            memory["growth_after_warm_mb"] = memory["end_mb"] - memory["warm_mb"]
        code = processes.stop(procs["gw"])
        if code != 0:
            raise BenchError(f"the gateway exited {code} on SIGTERM:\n{procs['gw'].log_tail()}")
    return results, skipped, memory


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    machine = machine_info()
    logs = Path(tempfile.mkdtemp(prefix="a2a-bench-"))
    logs.chmod(0o755)  # nginx's worker (nobody) reads its files under it
    (logs / "peers").mkdir(mode=0o755)
    (logs / "workers").mkdir()
    peers_data = run_peers(args, logs)
    workers_data = run_workers(args, logs)
    results, skipped, memory = ([], [], {}) if args.skip_groups else run_real(args, logs)
    relay_data = run_relay(args, logs)
    journal_data = run_journal(args, logs)
    migration_data = run_migration(args, logs)
    metrics = report.derive(results)
    metrics.update({f"memory.{k}": v for k, v in memory.items()})
    metrics.update(peers_report.derive(peers_data))
    metrics.update(workers.derive(workers_data))
    metrics.update(relay_report.derive(relay_data["rows"]))
    metrics.update(journal_report.derive(journal_data))
    metrics.update(migration_report.derive(migration_data))
    shutil.rmtree(logs, ignore_errors=True)
    return {"machine": machine, "elapsed_s": time.monotonic() - started,
            "groups": {g.name: {"concurrency": g.concurrency, "rounds": g.rounds}
                       for g in GROUPS},
            "scale": args.scale,
            "loadavg_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "results": results, "skipped": skipped, "memory": memory, "metrics": metrics,
            "peers": peers_data, "workers": workers_data, "relay": relay_data,
            "journal": journal_data, "migration": migration_data,
            "targets": evaluate(metrics)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every request count (0.1 for a smoke run)")
    parser.add_argument("--budget", type=float, default=110.0,
                        help="seconds for all scenarios; the rest are skipped")
    parser.add_argument("--only", default="", help="regex: run matching scenario ids only")
    parser.add_argument("--loop", choices=peers.LOOPS, default="asyncio",
                        help="event loop of the gateway and the bare proxy in the peer "
                             "comparison (A2A_GATEWAY_LOOP); the other one is measured too")
    parser.add_argument("--one-loop", action="store_true",
                        help="peers: measure only --loop, not the other loop as well")
    parser.add_argument("--peer-rounds", type=int, default=5,
                        help="peers: rounds of the primary loop's runs, interleaved; each "
                             "peer's best round is reported")
    parser.add_argument("--skip-peers", action="store_true",
                        help="skip the peer comparison (nginx, bare proxy, gateway, pinned)")
    parser.add_argument("--skip-workers", action="store_true",
                        help="skip the 1-worker vs 2-worker measurement (bench/workers.py)")
    parser.add_argument("--skip-relay", action="store_true",
                        help="skip the push relay's durable queue vs in-memory (bench/relay.py)")
    parser.add_argument("--skip-journal", action="store_true",
                        help="skip the stream journal on vs off (bench/journal.py)")
    parser.add_argument("--skip-migration", action="store_true",
                        help="skip migration mode: none, off, canary, shadow "
                             "(bench/migration.py)")
    parser.add_argument("--skip-groups", action="store_true",
                        help="run only the peer comparison, not the real-backend groups")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="run nothing: write the report of a saved run (last-run.json)")
    parser.add_argument("--json", type=Path, default=HERE / "last-run.json")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS.md",
                        help="markdown summary ('-' to skip)")
    return parser.parse_args(argv)


def section_view(data: dict[str, Any], name: str, targets: list[Target]) -> dict[str, Any]:
    """A section's data (the journal's, migration mode's) with the whole run's metrics and
    its targets (a --render of a saved run reads them again)."""
    return {**data[name], "metrics": data["metrics"],
            "targets": evaluate(data["metrics"], targets)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render is not None:
        # Report a saved run again (e.g. after a change to the report): same numbers.
        data = json.loads(args.render.read_text())
        metrics = report.derive(data["results"])
        metrics.update({f"memory.{k}": v for k, v in data["memory"].items()})
        metrics.update(peers_report.derive(data["peers"]))
        data.setdefault("workers", {"skipped": True, "results": []})
        metrics.update(workers.derive(data["workers"]))
        data.setdefault("relay", {"skipped": True, "rows": []})
        metrics.update(relay_report.derive(data["relay"]["rows"]))
        data.setdefault("journal", {"skipped": True, "rows": []})
        metrics.update(journal_report.derive(data["journal"]))
        data.setdefault("migration", {"skipped": True, "rows": []})
        metrics.update(migration_report.derive(data["migration"]))
        data["metrics"], data["targets"] = metrics, evaluate(metrics)
    else:
        try:
            data = run(args)
        except BenchError as exc:
            print(f"bench: the run broke: {exc}", file=sys.stderr)
            return 2
    rows = report.table_rows(data["results"], data["metrics"])
    data["peers_md"] = peers_report.markdown(data["peers"], data["metrics"], data["targets"])
    data["workers_md"] = workers.markdown(data["workers"], data["metrics"], data["targets"])
    print()
    print(report.text_table(["measure", "value", "target"],
                            peers_report.readme_rows(data["metrics"], data["targets"])
                            + workers.readme_rows(data["metrics"], data["targets"])))
    print()
    print(report.text_table(report.COLUMNS, rows))
    print("\ngateway RSS (MiB): " + ", ".join(
        f"{label} {value}" for label, value in report.memory_rows(data["memory"])))
    print()
    if data["relay"]["rows"]:
        print()
        relay.print_summary({**data["relay"], "metrics": data["metrics"]})
    if data["journal"]["rows"]:
        print()
        journal.print_summary(section_view(data, "journal", JOURNAL_TARGETS))
    if data["migration"]["rows"]:
        print()
        migration.print_summary(section_view(data, "migration", MIGRATION_TARGETS))
    print()
    print(report.text_table(report.TARGET_COLUMNS, report.target_rows(data["targets"]),
                            left=3))
    data["json_written"] = str(args.json)
    if args.render is None:
        args.json.write_text(json.dumps(data, indent=1, default=str) + "\n")
    if str(args.md) != "-":
        # Keep the sections bench/idle_streams.py and bench/recording.py write.
        old = args.md.read_text() if args.md.exists() else ""
        text = report.markdown(data)
        for name in report.OTHER_SECTIONS:
            kept = report.section(old, name)
            if kept is not None:
                text = report.put_section(text, name, kept)
        if data["relay"]["rows"]:
            text = report.put_section(text, relay.SECTION, relay_report.markdown(
                {**data["relay"], "metrics": data["metrics"],
                 "targets": evaluate(data["metrics"], RELAY_TARGETS)}))
        if data["journal"]["rows"]:
            text = report.put_section(text, journal.SECTION, journal_report.markdown(
                section_view(data, "journal", JOURNAL_TARGETS)))
        if data["migration"]["rows"]:
            text = report.put_section(text, migration.SECTION, migration_report.markdown(
                section_view(data, "migration", MIGRATION_TARGETS)))
        args.md.write_text(text)
    return report.summarize(data, args.json, args.md, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
