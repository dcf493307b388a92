"""The task index's cost per call, counted by valgrind (part of bench/recording.py).

Req/s and CPU time per request of a loaded hop vary by tens of percent from one window to
the next on a shared machine, more than the 10% the index may cost. The user-space
instructions the gateway process executes per call do not (bench/instructions_per_call.py,
whose counting this reuses): the three gateways of bench/recording.py (index `off`,
`sqlite`, `redis`) run under `valgrind --tool=callgrind`, each path is warmed up, the
counters zeroed, a fixed-time load of 4 connections run, the counters dumped.
Instructions ÷ answers, then each store's ÷ `off`'s, per path.

Counted: every thread of the gateway process, so the SQLite writer thread and the Redis
client's work on the event loop are in. Not counted: redis-server's own work (another
process, not the hop's) and kernel time (the syscalls of a write). For a CPU-bound hop,
throughput is inversely proportional to the work per call, so a ratio ≤ 1.10 bounds the
throughput recording costs to about 10%.

Batches: the writer waits up to `state.tasks.linger` (50 ms) for a batch to fill. Under
valgrind the hop answers ~40 times fewer calls per second than under load (~35 vs
~1,400), so with 50 ms every batch would carry one or two calls, and each call would pay a
whole transaction or round trip that under load ~70 calls share. The stores' gateways here
linger 40 times longer (LINGER), so a batch carries about as many calls as at full speed.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench import instructions_per_call as ipc
from bench.procs import Processes, free_port
from bench.recording_setup import counters, gateway_config, spec, state_for

LINGER = 0.05 * 40  # the default linger, scaled by valgrind's slowdown (docstring)
# After a load, until its last batch is written: the same for every setting, `off` too,
# so that the idle loop's instructions in the window are the same.
SETTLE = LINGER + 1.5


def measure(procs: Processes, logs: Path, echo_port: int, redis_port: int | None,
            settings: list[str], paths: list[str], duration: float) -> list[dict[str, Any]]:
    """One row per path and setting: calls, instructions, per call, records written."""
    out = logs / "callgrind.out"
    starts: dict[str, tuple[list[str], int]] = {}
    for setting in settings:
        port = free_port()
        config = logs / f"callgrind-{setting}.yaml"
        state = state_for(setting, logs, redis_port)
        if setting != "off":
            state["tasks"] = {"linger": LINGER}
        config.write_text(yaml.safe_dump(gateway_config(port, echo_port, state),
                                         sort_keys=False))
        starts[setting] = (ipc.gateway_under_valgrind(out, config), port)
    # Under valgrind a start takes about a minute: all at once.
    with ThreadPoolExecutor(len(starts)) as pool:
        started = {s: pool.submit(procs.start, f"callgrind-{s}", cmd, port, 600.0)
                   for s, (cmd, port) in starts.items()}
        hops = {s: f.result() for s, f in started.items()}
    rows = []
    for path in paths:
        for setting in settings:
            hop = hops[setting]
            load = spec(hop.port, path, 0.0, duration, {})
            ipc.warm_up(load)
            time.sleep(SETTLE)  # the warm-up's last batch written
            before = counters(hop.port)
            calls, instructions = ipc.count(hop.pid, out, load, duration, SETTLE)
            written = counters(hop.port)["written"] - before["written"]
            rows.append({"path": path, "setting": setting, "calls": calls,
                         "instructions": instructions, "per_call": instructions / calls,
                         "written": written})
            print(f"  {path:<10} {setting:<6} {calls:6d} calls  "
                  f"{instructions / calls / 1e6:7.3f} M instructions per call  "
                  f"written {written:.0f}", flush=True)
    for hop in hops.values():
        procs.stop(hop)
    return rows


def derive(rows: list[dict[str, Any]]) -> dict[str, float]:
    """`index:<path>.<setting>.instr_per_call`, and `.instr_vs_off` for a store."""
    per_call = {(r["path"], r["setting"]): r["per_call"] for r in rows}
    metrics: dict[str, float] = {}
    for (path, setting), value in per_call.items():
        metrics[f"index:{path}.{setting}.instr_per_call"] = value
        off = per_call.get((path, "off"))
        if off and setting != "off":
            metrics[f"index:{path}.{setting}.instr_vs_off"] = value / off
    return metrics
