"""The idle-streams run (bench/idle_streams.py) as text tables and as its own section of
bench/RESULTS.md (between the `idle-streams` markers, which bench.run keeps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import report
from bench.report import _f

STREAM_COLUMNS = ["case", "open/asked", "open s", "streams/s", "gw CPU ms/stream",
                  "RSS idle", "RSS open", "RSS closed", "peak", "KiB/stream",
                  "fds idle/open/closed", "CPU % held"]
LATENCY_COLUMNS = ["case", "idle p50 ms", "idle p95 ms", "loaded p50 ms", "loaded p95 ms",
                   "loaded max ms", "p50 loaded÷idle"]
CLOSE_COLUMNS = ["case", "slots held open/closed", "dropped early", "close s", "slots free s",
                 "stream outcomes (gateway /metrics)"]


def stream_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in data["results"]:
        m = data["metrics"]
        name = f"idle:{r['case']}"
        idle, open_, after = r["idle"], r["open"], r["after"]
        rows.append([
            r["case"], f"{r['opened']}/{r['streams']}", _f(r["open_s"], 1),
            _f(r["opened"] / r["open_s"] if r["open_s"] else None, 0),
            _f(m[f"{name}.open_cpu_ms_per_stream"], 2),
            _f(idle["rss_mb"]), _f(open_["rss_mb"]), _f(after["rss_mb"]), _f(after["hwm_mb"]),
            _f(m[f"{name}.rss_per_stream_kib"], 1),
            f"{idle['fds']}/{open_['fds']}/{after['fds']}", _f(r["quiet_cpu_pct"], 1)])
    return rows


def latency_rows(data: dict[str, Any]) -> list[list[str]]:
    return [[r["case"], _f(r["probe_idle"]["p50_ms"], 2), _f(r["probe_idle"]["p95_ms"], 2),
             _f(r["probe_load"]["p50_ms"], 2), _f(r["probe_load"]["p95_ms"], 2),
             _f(r["probe_load"]["max_ms"], 2),
             _f(data["metrics"][f"idle:{r['case']}.unary_p50_vs_idle"], 2)]
            for r in data["results"]]


def close_rows(data: dict[str, Any]) -> list[list[str]]:
    return [[r["case"], f"{r['open']['streams_in_use']}/{r['after']['streams_in_use']}",
             str(r["dropped"]), _f(r["close_s"], 1), _f(r["drain_s"], 1),
             ", ".join(f"{k} {v}" for k, v in sorted(r["after"]["outcomes"].items()))]
            for r in data["results"]]


def text(data: dict[str, Any]) -> str:
    return "\n\n".join([
        report.text_table(STREAM_COLUMNS, stream_rows(data)),
        report.text_table(LATENCY_COLUMNS, latency_rows(data)),
        report.text_table(CLOSE_COLUMNS, close_rows(data)),
        report.text_table(report.TARGET_COLUMNS, report.target_rows(data["targets"]), left=3),
    ])


def markdown(data: dict[str, Any]) -> str:
    machine = data["machine"]
    checks = data["targets"]
    passed = sum(c["status"] == "PASS" for c in checks)
    paths = "; ".join(f"`{r['case']}`: {r['path']}" for r in data["results"])
    streams = data["results"][0]["streams"] if data["results"] else 0
    changed = machine.get("uncommitted", 0)
    commit = machine["commit"] + (f" plus {changed} uncommitted file(s) in gateway/ and "
                                  "translators/" if changed else "")
    return "\n".join([
        f"## Idle streams: {streams:,} held open through the gateway",
        "",
        f"Written by `python -m bench.idle_streams` (the second half of `make bench`) on "
        f"{machine['date']}: {machine['nproc']} CPUs ({machine['cpu']}), Python "
        f"{machine['python']}, {machine['platform']}, load average {machine['loadavg']} at "
        f"the start and {data['loadavg_end']} at the end, commit {commit}. Whole "
        f"run: {data['elapsed_s']:.0f} s. Every number below comes from this one run.",
        "",
        f"Cases: {paths}. Each case starts a fresh gateway with `limits.max_streams`, "
        "`limits.max_connections` and the backend's `max_streams` sized for the run, "
        "`grpc_max_streams_per_connection: 1000`, and stream time bounds far beyond it; "
        "the stub backend (bench/idle_backends.py) answers each stream with one Task event "
        "and then stays silent. Load clients (bench/idle_clients.py, 2 processes) open the "
        "streams, 64 at a time per process, and hold them. Memory is VmRSS/VmHWM of the "
        "gateway (MiB) from /proc/<pid>/status: idle before, with every stream open (after "
        "2 s), and 2 s after every stream closed; `peak` is VmHWM at the end. `open s` runs "
        "from the clients' go to the last stream's first event; `gw CPU` is the gateway's "
        "CPU over that time; `CPU % held` its CPU over 5 s with every stream open and "
        "nothing else going on. The unary probe is `SendMessage` through the same ingress "
        "to the same backend, one call in flight, 500 calls after 100 warm-up calls, "
        "before the streams and with all of them open. See bench/README.md for why each "
        "case multiplexes one side over HTTP/2 (the open-files limit).",
        "",
        "### Streams, memory, CPU",
        "",
        report.md_table(STREAM_COLUMNS, stream_rows(data)),
        "",
        "### Unary latency, idle and with the streams open",
        "",
        report.md_table(LATENCY_COLUMNS, latency_rows(data)),
        "",
        "### Closing",
        "",
        "`slots held`: the gateway's `a2a_gateway_limit_in_use{limit=\"max_streams\"}` with "
        "every stream open and after they closed; `dropped early`: streams that ended "
        "before the client closed them; `close s`: from the clients' close signal until "
        "the gateway held no stream slot, `slots free s` the part of it after the clients "
        "had closed theirs.",
        "",
        report.md_table(CLOSE_COLUMNS, close_rows(data), left=1),
        "",
        f"### Targets ({passed}/{len(checks)} PASS; bench/targets.py IDLE_STREAM_TARGETS)",
        "",
        report.md_table(report.TARGET_COLUMNS, report.target_rows(checks), left=3),
    ])


def write_section(path: Path, data: dict[str, Any]) -> None:
    """Rewrite only the idle-streams section of ``path``; the rest stays as it is."""
    old = path.read_text() if path.exists() else ""
    path.write_text(report.put_section(old, report.IDLE_SECTION, markdown(data)))
