"""Ratios from one run's raw results, the stdout table, and bench/RESULTS.md."""

from __future__ import annotations

import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.procs import BenchError
from bench.scenarios import BY_NAME, REFERENCES

# One raw result per scenario, as bench/run.py collects it: "id", "group", "route",
# "concurrency", "load" (bench/load.py's summary) and "cpu" (seconds per process).
Result = dict[str, Any]


def _ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b


def derive(results: list[Result]) -> dict[str, float]:
    """The flat metric table the targets read: `<id>.<metric>`, `memory.*`, `all.*`."""
    by_id = {r["id"]: r for r in results}
    metrics: dict[str, float] = {}
    for r in results:
        sid, load = r["id"], r["load"]
        for key in ("rps", "p50_ms", "p95_ms", "p99_ms", "errors"):
            metrics[f"{sid}.{key}"] = float(load[key])
        route = BY_NAME[r["route"]]
        hop_cpu = r["cpu"].get(route.hop)
        if hop_cpu is not None and load["sent"]:
            metrics[f"{sid}.cpu_s_per_1k"] = hop_cpu / load["sent"] * 1000
        if route.hop != "gw":
            continue
        for ref_name, label in zip(REFERENCES[route.backend], ("direct", "plain"), strict=True):
            ref = by_id.get(f"{r['group']}:{ref_name}")
            if ref is None:
                continue
            metrics[f"{sid}.rps_vs_{label}"] = _ratio(load["rps"], ref["load"]["rps"])
            metrics[f"{sid}.p50_vs_{label}"] = _ratio(load["p50_ms"], ref["load"]["p50_ms"])
        plain = by_id.get(f"{r['group']}:{REFERENCES[route.backend][1]}")
        if plain is not None:
            metrics[f"{sid}.cpu_vs_plain"] = _ratio(metrics.get(f"{sid}.cpu_s_per_1k"),
                                                    metrics.get(f"{plain['id']}.cpu_s_per_1k"))
    metrics["all.errors"] = float(sum(r["load"]["errors"] for r in results))
    return metrics


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


COLUMNS = ["scenario", "ok/sent", "req/s", "p50 ms", "p95 ms", "p99 ms", "1st event ms",
           "rps÷direct", "rps÷plain", "p50÷direct", "p50÷plain", "hop CPU s/1k"]


def table_rows(results: list[Result], metrics: dict[str, float]) -> list[list[str]]:
    rows = []
    for r in results:
        sid, load = r["id"], r["load"]
        m = metrics.get
        rows.append([
            sid, f"{load['ok']}/{load['sent']}" + (" CAP" if load["capped"] else ""),
            _f(load["rps"], 0), _f(load["p50_ms"], 2), _f(load["p95_ms"], 2),
            _f(load["p99_ms"], 2), _f(load.get("first_event_p50_ms"), 2),
            _f(m(f"{sid}.rps_vs_direct"), 2),
            _f(m(f"{sid}.rps_vs_plain"), 2), _f(m(f"{sid}.p50_vs_direct"), 2),
            _f(m(f"{sid}.p50_vs_plain"), 2), _f(m(f"{sid}.cpu_s_per_1k"), 3)])
    return rows


def text_table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.rjust(w) if i >= left else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    return "\n".join(lines)


def md_table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A markdown table; the first `left` columns left-aligned, the rest right-aligned."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def target_rows(checks: list[dict[str, Any]]) -> list[list[str]]:
    return [[c["status"], c["why"], c["metric"], f"{c['op']} {c['limit']:g}",
             _f(c["value"], 3)] for c in checks]


TARGET_COLUMNS = ["result", "target", "metric", "limit", "measured"]


def memory_rows(memory: dict[str, float]) -> list[list[str]]:
    labels = [("start_mb", "idle, before any load"),
              ("warm_mb", "after the first group (lat)"),
              ("end_mb", "after the last scenario"),
              ("peak_mb", "peak (VmHWM)"),
              ("growth_mb", "growth start → end"),
              ("growth_after_warm_mb", "growth warm → end")]
    return [[label, _f(memory.get(key), 1)] for key, label in labels]


def route_rows() -> list[list[str]]:
    return [[r.name, r.description] for r in BY_NAME.values()]


# bench/RESULTS.md holds sections that other modules write between their own markers
# (`<!-- NAME:begin -->` ... `<!-- NAME:end -->`): bench.run rewrites the file and keeps
# them; each module replaces only its own.
IDLE_SECTION = "idle-streams"
RECORDING_SECTION = "task-index"
RELAY_SECTION = "push-relay"  # bench.relay's; bench.run rewrites it when it ran the relay
JOURNAL_SECTION = "stream-journal"  # bench.journal's; the same
MIGRATION_SECTION = "migration-mode"  # bench.migration's; the same
# Sections of bench/RESULTS.md other bench modules write (bench.run keeps them).
OTHER_SECTIONS = (IDLE_SECTION, RECORDING_SECTION, RELAY_SECTION, JOURNAL_SECTION,
                  MIGRATION_SECTION)


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def _span(document: str, name: str) -> tuple[int, int] | None:
    begin, end = _markers(name)
    start = document.find(begin)
    stop = document.find(end, start + len(begin)) if start >= 0 else -1
    return None if stop < 0 else (start, stop + len(end))


def section(document: str, name: str) -> str | None:
    """The text of section `name` of a document (markers left out), or None."""
    span = _span(document, name)
    if span is None:
        return None
    begin, end = _markers(name)
    return document[span[0] + len(begin):span[1] - len(end)].strip()


def put_section(document: str, name: str, body: str) -> str:
    """The document with section `name` replaced by ``body`` (appended if it had none)."""
    begin, end = _markers(name)
    block = f"{begin}\n{body.strip()}\n{end}"
    span = _span(document, name)
    if span is not None:
        return document[:span[0]] + block + document[span[1]:]
    return f"{document.rstrip()}\n\n{block}\n" if document.strip() else f"{block}\n"


def markdown(run: dict[str, Any]) -> str:
    m, machine = run["metrics"], run["machine"]
    rows = table_rows(run["results"], m)
    checks = run["targets"]
    passed = sum(c["status"] == "PASS" for c in checks)
    groups = run["groups"]
    parts = [
        "# Benchmark results",
        "",
        f"Written by `make bench` (`python -m bench.run`) on {machine['date']}: "
        f"{machine['nproc']} CPUs ({machine['cpu']}), Python {machine['python']}, "
        f"aiohttp {machine['aiohttp']}, {machine['platform']}, load average "
        f"{machine['loadavg']} at the start and {run.get('loadavg_end', '?')} at the end, "
        f"commit {machine['commit']}. Whole run: {run['elapsed_s']:.0f} s. Every number "
        "below comes from this one run.",
        "",
        run.get("peers_md", ""),
        run.get("workers_md", ""),
        "## Real backends, shared cores",
        "",
        "All processes run on 127.0.0.1 and share the machine's cores: the load client "
        "(aiohttp), the backends, the plain proxy and the gateway (`a2a-gateway serve`, "
        "default settings, `log_level: info`, its log on a file). Latency `lat` = 1 "
        f"request in flight; throughput `tput` = {groups['tput']['concurrency']} in "
        f"flight; streams = {groups['stream']['concurrency']} `stream: 5` calls in flight "
        "(8 events over ~250 ms each). One load client process per group runs the group's "
        f"scenarios round-robin ({groups['lat']['rounds']}, {groups['tput']['rounds']} "
        f"and {groups['stream']['rounds']} rounds), each round warmed up first and then a "
        "fixed count under a wall-clock cap, so that whatever else the machine does "
        "falls on every path alike; the figures pool all rounds.",
        "",
        "**Plain reverse proxy baseline**: `bench/plain_proxy.py`, a minimal aiohttp "
        "pass-through (forwards the body and end-to-end headers over pooled keep-alive "
        "connections, streams the answer back unchanged, no parsing, no logging). "
        "`÷direct` and `÷plain` compare a gateway path with the direct call and the "
        "plain-proxy call to the same backend in that backend's own dialect "
        "(`rps÷…` < 1: fewer requests per second; `p50÷…` > 1: slower). "
        "`hop CPU s/1k` = CPU seconds of the middle process (plain proxy or gateway) per "
        "1000 requests (streams: per 1000 streams), measured phases only. Gateway "
        "memory is VmRSS/VmHWM from /proc/<pid>/status.",
        "",
        "### Routes",
        "",
        md_table(["route", "what"], route_rows(), left=2),
        "",
        "### Results",
        "",
        md_table(COLUMNS, rows),
        "",
        "### Gateway memory (VmRSS, MiB)",
        "",
        md_table(["when", "MiB"], memory_rows(run["memory"])),
        "",
        "## Reproduce",
        "",
        "`make bench` (or `.venv/bin/python -m bench.run [--strict] [--scale 0.2]`); "
        "profile one gateway path with `.venv/bin/python -m bench.hotspots --route gw-10-03`.",
        "",
        f"## Targets ({passed}/{len(checks)} PASS; bench/targets.py)",
        "",
        md_table(TARGET_COLUMNS, target_rows(checks), left=3),
        "",
    ]
    if run.get("skipped"):
        parts += [f"Skipped (time budget): {', '.join(run['skipped'])}", ""]
    return "\n".join(parts)


def summarize(data: dict[str, Any], json_path: Any, md_path: Any, strict: bool) -> int:
    """The closing line of a bench run, and its exit code (1 under --strict when a target
    is missed)."""
    missed = [t for t in data["targets"] if t["status"] == "FAIL"]
    print(f"\n{len(missed)} target(s) missed; wrote {json_path}"
          + ("" if str(md_path) == "-" else f" and {md_path}")
          + f" in {data['elapsed_s']:.0f} s")
    return 1 if strict and missed else 0


def print_summary(table: str, *labelled: tuple[str, Iterable[str]]) -> None:
    """A section's summary on the terminal: its table, then each group of lines with its
    label ("target: ...", "recorded: ...")."""
    print(table)
    for label, lines in labelled:
        for line in lines:
            print(f"{label}: {line}")


def run_section(name: str, run: Callable[[Path], dict[str, Any]],
                summary: Callable[[dict[str, Any]], None], md: Path, section_name: str,
                render: Callable[[dict[str, Any]], str], strict: bool) -> int:
    """A section of `make bench` run on its own (`python -m bench.<name>`): ``run`` in a
    scratch directory of logs, its summary printed, its section of ``md`` rewritten
    (``-``: none). Exit status as bench/run.py's: 2 when the run broke, 1 with
    ``strict`` and a missed target, else 0."""
    logs = Path(tempfile.mkdtemp(prefix=f"a2a-bench-{name}-"))
    try:
        data = run(logs)
    except BenchError as exc:
        print(f"bench.{name}: the run broke: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    print()
    summary(data)
    if str(md) != "-":
        old = md.read_text() if md.exists() else ""
        md.write_text(put_section(old, section_name, render(data)))
    missed = [t for t in data["targets"] if t["status"] == "FAIL"]
    print(f"\n{len(missed)} target(s) missed in {data['elapsed_s']:.0f} s")
    return 1 if strict and missed else 0
