"""What the stream journal costs (issue 30, "Streams that survive"): the peers' setup with
the journal on and off, in one run, and the time to serve a resume.

    python -m bench.journal [--rounds 3] [--scale 1] [--loop asyncio] [--strict] [--md FILE|-]

`make bench` runs it inside `python -m bench.run` (its own section of bench/RESULTS.md,
its targets with the others'; `--skip-journal` leaves it out); alone it prints its
figures and rewrites that section.

As bench/peers.py measures the translated path `gw-03-10` (v0.3 JSON-RPC client →
gateway → v1.0 JSON-RPC echo stub): each gateway pinned to CPU 0, the load client
(bench/fastload.py) and bench/echo_stub.py on CPU 1. Two gateways of the same config, each
with a SQLite state store of its own: `on` with `state.journal.enabled: true` and the
journal's defaults (hold on), `off` with it off. Each round: the echo stub's stream
called directly (the reference for the first event), then both gateways' stream runs,
then both gateways' unary runs, the two swapping places every round. Then, in this
process on CPU 0, the resume of a 1,000-event gap (bench/journal_resume.py). About 90 s
at scale 1; `--scale` shortens every window. Figures and ratios: bench/journal_report.py.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import yaml

from bench import journal_report, journal_resume, nginx, peers, report
from bench.peers import LOAD_CORE, MIDDLE_CORE, Run, Timing
from bench.procs import BenchError, Proc, Processes, free_port, gateway_cmd
from bench.targets import JOURNAL_TARGETS, evaluate

HERE = Path(__file__).resolve().parent
SECTION = report.JOURNAL_SECTION
PEER = "gw-03-10"
ROUNDS = 3
KINDS = ("stream", "tput")
# Shortest windows whatever --scale says: below them the first-event p50 is a handful of
# streams.
MIN_WARMUP, MIN_DURATION = 0.3, 0.5


def timings(scale: float) -> dict[str, Timing]:
    """The peers' stream and unary windows, times ``scale``."""
    return {kind: Timing(max(MIN_WARMUP, t.warmup * scale),
                         max(MIN_DURATION, t.duration * scale), t.connections)
            for kind in KINDS for t in [peers.TIMINGS[kind]]}


def gateway_config(port: int, echo_port: int, db: Path, on: bool) -> dict[str, Any]:
    """The peers' gateway config (every tenant on the echo stub) with a SQLite store."""
    config = peers.gateway_config(port, echo_port, echo_port)
    config["state"] = {"path": str(db), "journal": {"enabled": on}}
    return config


def _start_gateway(processes: Processes, logs: Path, mode: str, port: int, echo_port: int,
                   loop: str) -> Proc:
    on = mode == "on"
    path = logs / f"journal-{mode}.yaml"
    path.write_text(yaml.safe_dump(gateway_config(port, echo_port, logs / f"journal-{mode}.db",
                                                  on), sort_keys=False))
    # The variable would override the file: an inherited one must not turn both alike.
    env = {"A2A_GATEWAY_LOOP": loop, "A2A_GATEWAY__STATE__JOURNAL__ENABLED": str(on).lower()}
    return processes.start(f"gateway-journal-{mode}", peers._pinned(gateway_cmd(path)), port,
                           env=env)


def journaled(db: Path) -> dict[str, int]:
    """Events and tasks in a store's journal (none when it has no journal table)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            events = conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0]
            tasks = conn.execute("SELECT COUNT(*) FROM journal_heads").fetchone()[0]
    except sqlite3.Error:
        return {"events": 0, "tasks": 0}
    return {"events": int(events), "tasks": int(tasks)}


def resume_on_middle_core() -> dict[str, Any]:
    """bench/journal_resume.py's timing, this thread (and the store's, which inherits it)
    on the gateways' core."""
    before = os.sched_getaffinity(0)
    pin = int(MIDDLE_CORE) in before
    if pin:
        os.sched_setaffinity(0, {int(MIDDLE_CORE)})
    try:
        out = asyncio.run(journal_resume.resume_times())
    finally:
        if pin:
            os.sched_setaffinity(0, before)
    if out["events"] != journal_resume.GAP:
        raise BenchError(f"journal resume served {out['events']} events, not "
                         f"{journal_resume.GAP}")
    return out


def run_journal(logs: Path, loop: str = "asyncio", rounds: int = ROUNDS,
                scale: float = 1.0) -> dict[str, Any]:
    """Every round of both gateways and the resume; the dict bench.run stores under
    "journal" (journal_report.markdown() reads it)."""
    started = time.monotonic()
    windows = timings(scale)
    ports = {"echo": free_port(), **{mode: free_port() for mode in journal_report.GATEWAYS}}
    out_rows: list[dict[str, Any]] = []
    with Processes(logs) as processes:
        echo = peers.start_echo(processes, ports["echo"], "journal-echo-stub")
        gateways = {mode: _start_gateway(processes, logs, mode, ports[mode], ports["echo"],
                                         loop) for mode in journal_report.GATEWAYS}
        watched = {"echo-stub": echo, **{gw.name: gw for gw in gateways.values()}}
        time.sleep(0.5)  # start-up work done before the first window

        def measure(run: Run, port: int, hop: Proc, label: str) -> dict[str, Any]:
            spec = peers._spec(run, port, {"hop": hop.pid})
            spec["warmup"], spec["duration"] = (windows[run.kind].warmup,
                                                windows[run.kind].duration)
            return peers.measure(run, spec, watched, label)

        for round_no in range(rounds):
            load = measure(Run("stream", "direct-echo", loop), ports["echo"], echo,
                           f"journal:stream:direct r{round_no}")
            out_rows.append(journal_report.row(round_no, "direct", "stream", load))
            order = journal_report.GATEWAYS[::1 if round_no % 2 == 0 else -1]
            # Each pair back to back, so that one window of the machine's falls on both; a
            # gateway's unary run never right after its own stream run, whose last streams
            # the gateway may still be finishing.
            for kind in KINDS:
                for mode in order:
                    load = measure(Run(kind, PEER, loop), ports[mode], gateways[mode],
                                   f"journal:{kind}:{mode} r{round_no}")
                    out_rows.append(journal_report.row(round_no, mode, kind, load))
        for gw in gateways.values():
            code = processes.stop(gw)
            if code not in (0, -15):
                raise BenchError(f"{gw.name} exited {code} on SIGTERM:\n{gw.log_tail()}")
    stored = {mode: journaled(logs / f"journal-{mode}.db") for mode in journal_report.GATEWAYS}
    # A run where both gateways journaled, or neither, would compare nothing.
    if not stored["on"]["events"] or stored["off"]["events"]:
        raise BenchError(f"journal on/off not as configured: events journaled {stored}")
    print(f"  journaled (on): {stored['on']['events']} events of {stored['on']['tasks']} "
          "tasks", flush=True)
    resume = resume_on_middle_core()
    print(f"  resume of {resume['events']} events: "
          + " ".join(f"{x:.1f}" for x in resume["times_ms"]) + " ms", flush=True)
    data: dict[str, Any] = {
        "skipped": False, "loop": loop, "rounds": rounds, "scale": scale, "peer": PEER,
        "events": nginx.STREAM_EVENTS,
        "timings": {kind: {"warmup": t.warmup, "duration": t.duration,
                           "connections": t.connections} for kind, t in windows.items()},
        "rows": out_rows, "journaled": stored, "resume": resume}
    data["metrics"] = journal_report.derive(data)
    data["targets"] = evaluate(data["metrics"], JOURNAL_TARGETS)
    data["elapsed_s"] = time.monotonic() - started
    return data


def print_summary(data: dict[str, Any]) -> None:
    report.print_summary(report.text_table(journal_report.COLUMNS, journal_report.rows(data), left=3),
                         ("target", journal_report.target_lines(data["targets"])),
                         ("recorded", journal_report.recorded(data["metrics"])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.journal", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="rounds of both gateways' runs, in turn (paired figures: the "
                             "median of the rounds')")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the measured windows (0.2 for a smoke run)")
    parser.add_argument("--loop", choices=peers.LOOPS, default="asyncio",
                        help="the gateways' event loop (A2A_GATEWAY_LOOP)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS.md",
                        help="markdown file whose stream journal section is rewritten "
                             "('-': none)")
    args = parser.parse_args(argv)
    print(f"stream journal: gateways on CPU {MIDDLE_CORE}, load client and echo stub on "
          f"CPU {LOAD_CORE}", flush=True)
    return report.run_section(
        "journal", lambda logs: run_journal(logs, args.loop, args.rounds, args.scale),
        print_summary, args.md, SECTION, journal_report.markdown, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
