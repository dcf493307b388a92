"""What migration mode costs (issue 32): one tenant without a migration, the same tenant
with its migration `off`, in `canary` and in `shadow` (copies of every call, and of none),
in one run.

    python -m bench.migration [--rounds 5] [--scale 1] [--connections 8] [--path same]
        [--loop asyncio] [--strict] [--md FILE|-]

`make bench` runs it inside `python -m bench.run` (its own section of bench/RESULTS.md,
its targets with the others'; `--skip-migration` leaves it out); alone it prints its
figures and rewrites that section.

As bench/peers.py measures: each gateway pinned to CPU 0, the load client
(bench/fastload.py) and bench/echo_stub.py on CPU 1. One gateway per variant
(migration_report.VARIANTS), each with a SQLite state store of its own and one tenant
`shop` on the echo stub's `/m10` (a new task and conversation per message, the task
asked for per GetTask); its candidate, where it has one, is the same stub at the same
address. The stub answers at once, so the gateway's core is the limit and calls/s
measures what each mode costs; the `wait-` variants' agent takes AGENT_MS to answer, so
the gateway has time to spare and the client's p50 shows whether it waits for the
copies (shadow) and what the canary adds to a call's time. The load: new conversations
(SendMessage without a contextId) and GetTask on tasks the gateway made before the
rounds (seeded through it, so in canary they belong to both agents), in turn, on a
fixed modest number of connections. Each round loads every
gateway once, the order reversed every other round. At the end each gateway's /metrics
must show what its mode does (canary: calls on both arms; shadow: copies compared, or
none). About 2½ minutes at scale 1. Figures and ratios: bench/migration_report.py.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from bench import migration_report, peers, report
from bench.migration_report import AGENT_MS, VARIANTS
from bench.peers import LOAD_CORE, MIDDLE_CORE, Run, Timing
from bench.procs import BenchError, Proc, Processes, free_port, gateway_cmd
from bench.targets import MIGRATION_TARGETS, evaluate

HERE = Path(__file__).resolve().parent
SECTION = report.MIGRATION_SECTION
TENANT = "shop"
ROUNDS = 5
CONNECTIONS = 8  # modest: the gateway's core busy, calls not queued deep behind each other
CANARY_SHARE = 0.3
SEED = 48  # tasks made through each gateway before the rounds, asked for by GetTask
WINDOW = Timing(0.5, 2.5, CONNECTIONS)
MIN_WARMUP, MIN_DURATION = 0.3, 0.5
MAX_REQUESTS = 2_000_000
# The client's dialect on each path: `same` is forwarded as sent when it can be (the
# cheapest call, so what the migration adds shows most), `translated` is gw-03-10's.
PATHS = {"same": "10", "translated": "03"}
_HEADERS = {"10": {"Content-Type": "application/json", "A2A-Version": "1.0"},
            "03": {"Content-Type": "application/json"}}
_EXPECT = {"10": "TASK_STATE_COMPLETED", "03": "completed"}


def migration_block(variant: str, candidate: dict[str, Any]) -> dict[str, Any] | None:
    """The tenant's `migration:` for a variant (None: the tenant has none)."""
    variant = migration_report.mode_of(variant)
    if variant == "none":
        return None
    if variant == "off":
        return {"mode": "off", "candidate": candidate}
    if variant == "canary":
        return {"mode": "canary", "candidate": candidate,
                "canary": {"share": CANARY_SHARE}}
    share = 1.0 if variant.endswith("shadow-100") else 0.0
    return {"mode": "shadow", "candidate": candidate,
            "shadow": {"share": share, "operations": ["SendMessage", "GetTask"]}}


def gateway_config(variant: str, port: int, echo_port: int, db: Path) -> dict[str, Any]:
    wait = f"/wait{AGENT_MS}" if variant.startswith(migration_report.WAIT) else ""
    backend = {"url": f"http://127.0.0.1:{echo_port}/m10{wait}", "version": "1.0",
               "binding": "JSONRPC", "precheck": False}
    tenant: dict[str, Any] = {"backend": backend}
    block = migration_block(variant, dict(backend))
    if block is not None:
        tenant["migration"] = block
    return {"listen": {"http": f"127.0.0.1:{port}"}, "workers": 1,
            "state": {"path": str(db)}, "tenants": {TENANT: tenant}}


def send_body(client: str, n: int = 1) -> str:
    """A message that starts a new conversation (no contextId, no taskId)."""
    if client == "10":
        message: dict[str, Any] = {"messageId": f"m-{n}", "role": "ROLE_USER",
                                   "parts": [{"text": "bench ping"}]}
        method = "SendMessage"
    else:
        message = {"kind": "message", "messageId": f"m-{n}", "role": "user",
                   "parts": [{"kind": "text", "text": "bench ping"}]}
        method = "message/send"
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": {"message": message}}, separators=(",", ":"))


def get_body(client: str, task_id: str) -> str:
    method = "GetTask" if client == "10" else "tasks/get"
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": {"id": task_id}}, separators=(",", ":"))


def bodies(client: str, task_ids: list[str]) -> list[str]:
    """New conversations and GetTask on known tasks, in turn."""
    out = []
    for task_id in task_ids:
        out += [send_body(client), get_body(client, task_id)]
    return out


def _post(port: int, client: str, body: str) -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{TENANT}",
                                     data=body.encode(), headers=_HEADERS[client])
    with urllib.request.urlopen(request, timeout=10) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    return answer


def seed(port: int, client: str, count: int = SEED) -> list[str]:
    """Tasks made through the gateway (their owners bound where it binds them)."""
    ids = []
    for n in range(count):
        answer = _post(port, client, send_body(client, n))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise BenchError(f"seeding a task through the gateway: {answer}")
        task = result.get("task", result) if client == "10" else result
        ids.append(str(task["id"]))
    return ids


def seen(port: int) -> dict[str, float]:
    """The gateway's migration counters (/metrics), summed by arm and by verdict."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return migration_report.counters(text)


def _start(processes: Processes, logs: Path, variant: str, port: int, echo_port: int,
           loop: str) -> Proc:
    path = logs / f"migration-{variant}.yaml"
    path.write_text(yaml.safe_dump(gateway_config(variant, port, echo_port,
                                                  logs / f"migration-{variant}.db"),
                                   sort_keys=False))
    return processes.start(f"gateway-migration-{variant}", peers._pinned(gateway_cmd(path)),
                           port, env={"A2A_GATEWAY_LOOP": loop})


def window(scale: float, connections: int) -> Timing:
    return Timing(max(MIN_WARMUP, WINDOW.warmup * scale),
                  max(MIN_DURATION, WINDOW.duration * scale), connections)


def run_migration(logs: Path, loop: str = "asyncio", rounds: int = ROUNDS,
                  scale: float = 1.0, connections: int = CONNECTIONS,
                  path: str = "same", only: str = "") -> dict[str, Any]:
    """Every round of every variant's gateway (those whose name ``only`` finds); the
    dict bench.run stores under "migration" (migration_report.markdown() reads it)."""
    started = time.monotonic()
    loadavg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    timing = window(scale, connections)
    client = PATHS[path]
    variants = tuple(v for v in VARIANTS if re.search(only, v))
    if not variants:
        raise BenchError(f"no variant of {', '.join(VARIANTS)} matches {only!r}")
    ports = {"echo": free_port(), **{variant: free_port() for variant in variants}}
    out_rows: list[dict[str, Any]] = []
    with Processes(logs) as processes:
        echo = peers.start_echo(processes, ports["echo"], "migration-echo-stub")
        gateways = {v: _start(processes, logs, v, ports[v], ports["echo"], loop)
                    for v in variants}
        watched = {"echo-stub": echo, **{gw.name: gw for gw in gateways.values()}}
        mixes = {v: bodies(client, seed(ports[v], client)) for v in variants}
        time.sleep(0.5)  # the seeds' background writes done before the first window
        for round_no in range(rounds):
            order = variants if round_no % 2 == 0 else variants[::-1]
            for variant in order:
                spec = {"port": ports[variant], "path": f"/{TENANT}",
                        "headers": _HEADERS[client], "bodies": mixes[variant],
                        "kind": "unary", "expect": _EXPECT[client], "events": 0,
                        "connections": timing.connections, "warmup": timing.warmup,
                        "duration": timing.duration, "max_requests": MAX_REQUESTS,
                        "watch": {"hop": gateways[variant].pid}}
                load = peers.measure(Run("tput", "gw-same", loop), spec, watched,
                                     f"migration:{variant} r{round_no}")
                out_rows.append(migration_report.row(round_no, variant, load))
        counted = {v: seen(ports[v]) for v in variants}
        for gw in gateways.values():
            code = processes.stop(gw)
            if code not in (0, -15):
                raise BenchError(f"{gw.name} exited {code} on SIGTERM:\n{gw.log_tail()}")
    wrong = migration_report.not_as_configured(counted)
    if wrong:
        raise BenchError(f"migration variants not as configured: {wrong}; counted {counted}")
    data: dict[str, Any] = {
        "skipped": False, "date": datetime.date.today().isoformat(), "loadavg": loadavg,
        "loop": loop, "rounds": rounds, "scale": scale, "path": path,
        "canary_share": CANARY_SHARE, "seeded": SEED,
        "timing": {"warmup": timing.warmup, "duration": timing.duration,
                   "connections": timing.connections},
        "rows": out_rows, "counted": counted}
    data["metrics"] = migration_report.derive(data)
    data["targets"] = evaluate(data["metrics"], MIGRATION_TARGETS)
    data["elapsed_s"] = time.monotonic() - started
    return data


def print_summary(data: dict[str, Any]) -> None:
    report.print_summary(report.text_table(migration_report.COLUMNS, migration_report.rows(data), left=2),
                         ("target", migration_report.target_lines(data["targets"])),
                         ("recorded", migration_report.recorded(data)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.migration", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="rounds of every variant's run, in turn (ratios: the median "
                             "of the rounds' paired ones)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the measured windows (0.2 for a smoke run)")
    parser.add_argument("--connections", type=int, default=CONNECTIONS,
                        help="connections of the load client, each one call at a time")
    parser.add_argument("--path", choices=sorted(PATHS), default="same",
                        help="same: v1.0 client → v1.0 agent (forwarded as sent where it "
                             "can be); translated: v0.3 client → v1.0 agent")
    parser.add_argument("--loop", choices=peers.LOOPS, default="asyncio",
                        help="the gateways' event loop (A2A_GATEWAY_LOOP)")
    parser.add_argument("--only", default="",
                        help="regex: load only the variants it finds (" + ", ".join(VARIANTS)
                        + "); the targets of the others are N/A")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS.md",
                        help="markdown file whose migration section is rewritten ('-': none)")
    args = parser.parse_args(argv)
    print(f"migration mode: gateways on CPU {MIDDLE_CORE}, load client and echo stub on "
          f"CPU {LOAD_CORE}", flush=True)
    return report.run_section(
        "migration", lambda logs: run_migration(logs, args.loop, args.rounds, args.scale,
                                                args.connections, args.path, args.only),
        print_summary, args.md, SECTION, migration_report.markdown, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
