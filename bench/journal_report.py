"""The stream journal bench's figures (bench/journal.py): the metrics the targets read,
the table and the RESULTS.md section. Pure: no processes, no clock.

Metric names: `journal:<kind>.<gateway>.<metric>`, `<kind>` `stream` or `tput`,
`<gateway>` `on` (the journal on) or `off` (the same config with it off), `direct` for the
echo stub called without the gateway; the pairs measured in the same round give
`journal:stream.<gateway>.first_event_added_ms` (the gateway's first event p50 minus the
direct call's), `journal:stream.events_on_vs_off`, `journal:tput.on_vs_off` and
`journal:tput.cpu_on_vs_off`; the in-process resume `journal:resume.*`.
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Callable
from typing import Any

GATEWAYS = ("on", "off")
# A row's figures (bench/peers.measure's result, cut down).
FIGURES = ("events_per_s", "rps", "first_event_p50_ms", "p50_ms", "cpu_ms_per_req",
           "hop_cpu_util", "ok", "errors")
# Each figure's best over the rounds: other work on a shared machine only makes a round
# slower, so the best is the least disturbed (as the peers' runs report).
_BEST: dict[str, dict[str, Callable[[float, float], float]]] = {
    "stream": {"events_per_s": max, "first_event_p50_ms": min, "cpu_ms_per_req": min},
    "tput": {"rps": max, "p50_ms": min, "cpu_ms_per_req": min},
}


def row(round_no: int, gateway: str, kind: str, load: dict[str, Any]) -> dict[str, Any]:
    """One measured run as the data keeps it."""
    return {"round": round_no, "gateway": gateway, "kind": kind,
            **{key: float(load[key]) for key in FIGURES if key in load}}


def _paired(rows: list[dict[str, Any]], kind: str, metric: str, top: str, bottom: str,
            combine: Callable[[float, float], float]) -> float:
    """The median over rounds of combine(``top``'s figure, ``bottom``'s) of one round:
    both measured seconds apart, so a window in which the machine was slower moves both.
    NaN when no round has both."""
    by_round: dict[int, dict[str, float]] = {}
    for r in rows:
        if r["kind"] == kind and metric in r:
            by_round.setdefault(r["round"], {})[r["gateway"]] = r[metric]
    values = [combine(pair[top], pair[bottom]) for pair in by_round.values()
              if top in pair and bottom in pair]
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def _ratio(top: float, bottom: float) -> float:
    return top / bottom if bottom else math.nan


def derive(data: dict[str, Any]) -> dict[str, float]:
    """The flat metrics `journal:*` that bench/targets.py reads."""
    rows: list[dict[str, Any]] = data.get("rows", [])
    m: dict[str, float] = {}
    for r in rows:
        for metric, best in _BEST[r["kind"]].items():
            value = r.get(metric, math.nan)
            if math.isnan(value):
                continue
            key = f"journal:{r['kind']}.{r['gateway']}.{metric}"
            m[key] = value if key not in m else best(m[key], value)
    if rows:
        for gateway in GATEWAYS:
            m[f"journal:stream.{gateway}.first_event_added_ms"] = _paired(
                rows, "stream", "first_event_p50_ms", gateway, "direct", operator.sub)
        m["journal:stream.events_on_vs_off"] = _paired(rows, "stream", "events_per_s", "on",
                                                       "off", _ratio)
        m["journal:tput.on_vs_off"] = _paired(rows, "tput", "rps", "on", "off",
                                              _ratio)
        m["journal:tput.cpu_on_vs_off"] = _paired(rows, "tput", "cpu_ms_per_req", "on",
                                                  "off", _ratio)
        m["journal:all.errors"] = float(sum(r.get("errors", 0.0) for r in rows))
    times = data.get("resume", {}).get("times_ms", [])
    if times:
        m["journal:resume.gap_1000_ms"] = statistics.median(times)
        m["journal:resume.gap_1000_max_ms"] = max(times)
    journaled = data.get("journaled", {}).get("on")
    if journaled:
        m["journal:stream.on.journaled_events"] = float(journaled["events"])
    return m


def _f(value: float | None, digits: int) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


COLUMNS = ["round", "gateway", "run", "events/s", "req/s", "first event p50 ms",
           "p50 ms", "hop CPU ms/req", "hop CPU %", "errors"]


def rows(data: dict[str, Any]) -> list[list[str]]:
    out = []
    for r in data["rows"]:
        stream = r["kind"] == "stream"
        out.append([str(r["round"]), "direct (echo stub)" if r["gateway"] == "direct"
                    else f"journal {r['gateway']}", r["kind"],
                    _f(r.get("events_per_s"), 0) if stream else "",
                    _f(r.get("rps"), 0 if not stream else 1),
                    _f(r.get("first_event_p50_ms"), 2) if stream else "",
                    _f(r.get("p50_ms"), 2), _f(r.get("cpu_ms_per_req"), 3),
                    _f(100 * r.get("hop_cpu_util", math.nan), 0),
                    _f(r.get("errors"), 0)])
    return out


# What is recorded beside the targets: (metric, label, digits, signed).
RECORDED = [
    ("journal:stream.off.events_per_s", "translated SSE events/s, journal off (best round)",
     0, False),
    ("journal:stream.events_on_vs_off", "SSE events/s, journal on ÷ off (median of paired "
     "rounds)", 2, False),
    ("journal:stream.off.first_event_added_ms", "first event, journal off: added vs direct "
     "(ms, median of paired rounds)", 2, True),
    ("journal:tput.on.rps", "translated unary req/s, journal on (best round)", 0, False),
    ("journal:tput.off.rps", "translated unary req/s, journal off (best round)", 0, False),
    ("journal:tput.cpu_on_vs_off", "gateway CPU per translated unary call, on ÷ off "
     "(median of paired rounds)", 2, False),
    ("journal:resume.gap_1000_max_ms", "resume of a 1,000-event gap, slowest of the "
     "repeats (ms)", 1, False),
    ("journal:stream.on.journaled_events", "events in the journal-on gateway's store at "
     "the end", 0, False),
]


def recorded(metrics: dict[str, float]) -> list[str]:
    out = []
    for key, label, digits, signed in RECORDED:
        value = metrics.get(key, math.nan)
        if not math.isnan(value):
            out.append(f"{label}: {'+' if signed and value >= 0 else ''}{_f(value, digits)}")
    return out


def target_lines(checks: list[dict[str, Any]]) -> list[str]:
    # Rates as whole numbers, ratios and milliseconds with two decimals.
    return [f"{t['why']}: {_f(t['value'], 0 if abs(t['value']) >= 1000 else 2)} — "
            f"**{t['status']}**" for t in checks if t["status"] != "N/A"]


def markdown(data: dict[str, Any]) -> str:
    t = data["timings"]
    resume = data.get("resume", {})
    lines = [
        "## Stream journal: on vs off (`python -m bench.journal`)", "",
        "The peers' setup (bench/peers.py): each gateway alone on CPU 0, the load client "
        "(bench/fastload.py) and bench/echo_stub.py on CPU 1, all on 127.0.0.1; the "
        "translated path `gw-03-10` (v0.3 JSON-RPC client → gateway → v1.0 JSON-RPC echo "
        "stub). Two gateways of one config, a SQLite state store each: `on` with "
        "`state.journal.enabled: true` and the journal's default settings (hold on), "
        f"`off` without. Event loop `{data['loop']}`. {data['rounds']} rounds; in each, "
        "the echo stub's stream called directly, then both gateways' stream runs, then "
        "both gateways' unary runs (the two swap places every round). Streams: "
        f"{t['stream']['connections']} connections, {t['stream']['warmup']:g} s warm-up, "
        f"{t['stream']['duration']:g} s measured, each stream {data['events']} events of "
        f"a task of its own; unary: {t['tput']['connections']} connections, "
        f"{t['tput']['warmup']:g} s warm-up, {t['tput']['duration']:g} s measured. "
        "Events/s: the best round; the first event's added time and the on ÷ off ratios: "
        "the median of the rounds' paired figures (each from one round). Resume: in "
        f"process, {resume.get('events', 0):,} events journaled in a SQLite store served "
        "to a resumed stream (read, re-journaled in the driver's appends of 32), "
        f"{len(resume.get('times_ms', []))} times (bench/journal_resume.py): "
        + ", ".join(f"{x:.1f}" for x in resume.get("times_ms", [])) + " ms; the target "
        "reads their median.", ""]
    lines += ["| " + " | ".join(COLUMNS) + " |",
              "|---|---|---|" + "---:|" * (len(COLUMNS) - 3)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(data)]
    lines += [""] + [f"- {line}" for line in target_lines(data["targets"])]
    lines += [f"- recorded: {line}" for line in recorded(data["metrics"])]
    return "\n".join(lines).rstrip()
