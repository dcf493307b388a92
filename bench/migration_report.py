"""The migration mode bench's figures (bench/migration.py): the metrics the targets read,
the table and the RESULTS.md section. Pure: no processes, no clock.

Metric names: `migration:<variant>.<metric>` (each figure's best round) for the variants
below; the pairs measured in the same round give `migration:tput.off_vs_none` and
`migration:tput.canary_vs_plain` (calls/s, the plain call being the tenant without a
migration), `migration:p50.shadow100_vs_shadow0` (the client's p50 with every call
copied ÷ with none, on an agent that takes its time; `..._busy`: on one that answers at
once, the gateway's core the limit) and the same pairs' CPU per call, `migration:cpu.*`.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from typing import Any

# none: no migration block; off: `mode: off`; canary: a share of new conversations to the
# candidate; shadow-100 / shadow-0: `mode: shadow`, every call copied / none. All on an
# agent that answers at once, so the gateway's core is what limits them (their CPU per
# call is what they cost); the `wait-` variants are the same on an agent that takes
# AGENT_MS to answer, a gateway with time to spare: does the client wait for the copies
# (the shadow pair), and what does the canary add to a call's time (canary ÷ none)?
VARIANTS = ("none", "off", "canary", "shadow-0", "shadow-100", "wait-none", "wait-canary",
            "wait-shadow-0", "wait-shadow-100")
AGENT_MS = 5
WAIT = "wait-"  # a variant measured on the agent that takes AGENT_MS


def mode_of(variant: str) -> str:
    """The variant's tenant, whichever agent it is measured on ("wait-canary": canary)."""
    return variant.removeprefix(WAIT)

LABELS = {"none": "no migration", "off": "mode: off", "canary": "mode: canary",
          "shadow-0": "mode: shadow, share 0", "shadow-100": "mode: shadow, share 1",
          "wait-none": f"no migration; agent {AGENT_MS} ms",
          "wait-canary": f"mode: canary; agent {AGENT_MS} ms",
          "wait-shadow-0": f"mode: shadow, share 0; agent {AGENT_MS} ms",
          "wait-shadow-100": f"mode: shadow, share 1; agent {AGENT_MS} ms"}
FIGURES = ("rps", "p50_ms", "p90_ms", "p99_ms", "cpu_ms_per_req", "hop_cpu_util", "ok",
           "errors")
# Each figure's best over the rounds: other work on a shared machine only makes a round
# slower, so the best is the least disturbed.
_BEST: dict[str, Callable[[float, float], float]] = {"rps": max, "p50_ms": min,
                                                      "cpu_ms_per_req": min}
# The paired ratios: (metric name, figure, top variant, bottom variant).
PAIRS = [("migration:tput.off_vs_none", "rps", "off", "none"),
         ("migration:tput.canary_vs_plain", "rps", "canary", "none"),
         ("migration:p50.shadow100_vs_shadow0", "p50_ms", "wait-shadow-100", "wait-shadow-0"),
         ("migration:p50.shadow100_vs_shadow0_busy", "p50_ms", "shadow-100", "shadow-0"),
         ("migration:p50.off_vs_none", "p50_ms", "off", "none"),
         ("migration:p50.canary_vs_plain", "p50_ms", "canary", "none"),
         ("migration:p50.canary_vs_plain_agent", "p50_ms", "wait-canary", "wait-none"),
         ("migration:tput.shadow100_vs_shadow0", "rps", "shadow-100", "shadow-0"),
         ("migration:tput.shadow0_vs_none", "rps", "shadow-0", "none"),
         ("migration:cpu.off_vs_none", "cpu_ms_per_req", "off", "none"),
         ("migration:cpu.canary_vs_plain", "cpu_ms_per_req", "canary", "none"),
         ("migration:cpu.shadow100_vs_shadow0", "cpu_ms_per_req", "shadow-100", "shadow-0"),
         ("migration:cpu.shadow0_vs_none", "cpu_ms_per_req", "shadow-0", "none")]


def row(round_no: int, variant: str, load: dict[str, Any]) -> dict[str, Any]:
    """One measured run as the data keeps it."""
    return {"round": round_no, "variant": variant,
            **{key: float(load[key]) for key in FIGURES if key in load}}


def paired(rows: list[dict[str, Any]], figure: str, top: str, bottom: str) -> float:
    """The median over rounds of ``top``'s figure ÷ ``bottom``'s in the same round (both
    measured seconds apart: a window in which the machine was slower moves both). NaN
    when no round has both."""
    by_round: dict[int, dict[str, float]] = {}
    for r in rows:
        if figure in r:
            by_round.setdefault(r["round"], {})[r["variant"]] = r[figure]
    values = [pair[top] / pair[bottom] for pair in by_round.values()
              if pair.get(bottom) and top in pair and not math.isnan(pair[top])]
    return statistics.median(values) if values else math.nan


def derive(data: dict[str, Any]) -> dict[str, float]:
    """The flat metrics `migration:*` that bench/targets.py reads."""
    rows: list[dict[str, Any]] = data.get("rows", [])
    m: dict[str, float] = {}
    for r in rows:
        for figure, best in _BEST.items():
            value = r.get(figure, math.nan)
            if math.isnan(value):
                continue
            key = f"migration:{r['variant']}.{figure}"
            m[key] = value if key not in m else best(m[key], value)
    if rows:
        for name, figure, top, bottom in PAIRS:
            m[name] = paired(rows, figure, top, bottom)
        m["migration:all.errors"] = float(sum(r.get("errors", 0.0) for r in rows))
    return m


_SAMPLE = re.compile(r'^(a2a_gateway_migration_\w+?)(?:_total)?\{([^}]*)\}\s+(\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def counters(text: str) -> dict[str, float]:
    """The migration counters of a /metrics page: calls by arm (`calls.<arm>`), shadow
    comparisons by verdict (`shadow.<verdict>`), the canary's share (`share`)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        found = _SAMPLE.match(line)
        if found is None or found.group(1).endswith("_created"):
            continue
        name, labels = found.group(1), dict(_LABEL.findall(found.group(2)))
        value = float(found.group(3))
        if name == "a2a_gateway_migration_calls":
            key = f"calls.{labels.get('arm', '?')}"
        elif name == "a2a_gateway_migration_shadow_comparisons":
            key = f"shadow.{labels.get('verdict', '?')}"
        elif name == "a2a_gateway_migration_canary_share":
            out["share"] = value
            continue
        else:
            continue
        out[key] = out.get(key, 0.0) + value
    return out


def not_as_configured(counted: dict[str, dict[str, float]]) -> list[str]:
    """What a variant's counters (those measured) show it did not do as its mode says
    (empty: all did)."""
    wrong = []
    for variant, seen in counted.items():
        mode = mode_of(variant)
        arms = [seen.get(f"calls.{arm}") for arm in ("primary", "candidate")]
        compared = seen.get("shadow.agree") or seen.get("shadow.disagree")
        if mode in ("none", "off"):
            if any(arms):
                wrong.append(f"{variant}: calls counted by a migration")
        elif mode == "canary":
            if not all(arms):
                wrong.append(f"{variant}: not both agents called")
            if not seen.get("share"):
                wrong.append(f"{variant}: its share is 0 (rolled back?)")
        elif mode == "shadow-100" and not compared:
            wrong.append(f"{variant}: no copy compared")
        elif mode == "shadow-0" and (compared or seen.get("shadow.skipped")):
            wrong.append(f"{variant}: copies made")
    return wrong


def _f(value: float | None, digits: int) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


COLUMNS = ["round", "gateway", "calls/s", "p50 ms", "p90 ms", "p99 ms", "hop CPU ms/call",
           "hop CPU %", "errors"]


def rows(data: dict[str, Any]) -> list[list[str]]:
    return [[str(r["round"]), LABELS.get(r["variant"], r["variant"]), _f(r.get("rps"), 0),
             _f(r.get("p50_ms"), 2), _f(r.get("p90_ms"), 2), _f(r.get("p99_ms"), 2),
             _f(r.get("cpu_ms_per_req"), 3), _f(100 * r.get("hop_cpu_util", math.nan), 0),
             _f(r.get("errors"), 0)] for r in data["rows"]]


# What is recorded beside the targets: (metric, label, digits).
RECORDED = [
    ("migration:none.rps", "calls/s without a migration (best round)", 0),
    ("migration:canary.rps", "calls/s in canary (best round)", 0),
    ("migration:p50.off_vs_none", "client p50, mode off ÷ no migration", 3),
    ("migration:p50.canary_vs_plain", "client p50, canary ÷ no migration", 3),
    ("migration:p50.canary_vs_plain_agent", f"client p50, canary ÷ no migration, agent "
     f"answering in {AGENT_MS} ms (a gateway with time to spare)", 3),
    ("migration:tput.shadow0_vs_none", "calls/s, shadow at share 0 ÷ no migration", 3),
    ("migration:p50.shadow100_vs_shadow0_busy", "client p50, shadow at share 1 ÷ share 0, "
     "agent answering at once (the gateway's core the limit)", 3),
    ("migration:tput.shadow100_vs_shadow0", "calls/s, shadow at share 1 ÷ share 0", 3),
    ("migration:cpu.off_vs_none", "gateway CPU per call, mode off ÷ no migration", 3),
    ("migration:cpu.canary_vs_plain", "gateway CPU per call, canary ÷ no migration", 3),
    ("migration:cpu.shadow0_vs_none", "gateway CPU per call, shadow at share 0 ÷ no "
     "migration", 3),
    ("migration:cpu.shadow100_vs_shadow0", "gateway CPU per client call, shadow at share 1 "
     "÷ share 0 (the copies included)", 3),
]


def recorded(data: dict[str, Any]) -> list[str]:
    metrics: dict[str, float] = data["metrics"]
    out = []
    for key, label, digits in RECORDED:
        value = metrics.get(key, math.nan)
        if not math.isnan(value):
            how = " (median of paired rounds)" if "_vs_" in key else ""
            out.append(f"{label}{how}: {_f(value, digits)}")
    counted = data.get("counted", {})
    canary, shadow = counted.get("canary", {}), counted.get("shadow-100", {})
    waited = counted.get("wait-shadow-100", {})
    if canary:
        calls = canary.get("calls.primary", 0.0) + canary.get("calls.candidate", 0.0)
        out.append(f"canary: {canary.get('calls.candidate', 0.0) / max(calls, 1):.0%} of "
                   f"{calls:,.0f} calls served by the candidate (share "
                   f"{canary.get('share', 0.0):g} of new conversations; GetTask follows "
                   "its task's owner)")
    if shadow:
        out.append(f"shadow at share 1: {shadow.get('shadow.agree', 0.0):,.0f} copies "
                   f"agreed, {shadow.get('shadow.disagree', 0.0):,.0f} disagreed, "
                   f"{shadow.get('shadow.skipped', 0.0):,.0f} skipped (max_concurrent), "
                   f"{shadow.get('shadow.failed', 0.0):,.0f} failed")
    if waited:
        out.append(f"shadow at share 1, agent {AGENT_MS} ms: "
                   f"{waited.get('shadow.agree', 0.0):,.0f} copies agreed, "
                   f"{waited.get('shadow.disagree', 0.0):,.0f} disagreed, "
                   f"{waited.get('shadow.skipped', 0.0):,.0f} skipped")
    return out


def target_lines(checks: list[dict[str, Any]]) -> list[str]:
    return [f"{t['why']}: {_f(t['value'], 3)} — **{t['status']}**" for t in checks
            if t["status"] != "N/A"]


def markdown(data: dict[str, Any]) -> str:
    t = data["timing"]
    client = ("v1.0 JSON-RPC client → gateway → v1.0 JSON-RPC echo stub (same dialect: "
              "forwarded as sent where the call allows)" if data["path"] == "same" else
              "v0.3 JSON-RPC client → gateway → v1.0 JSON-RPC echo stub (translated)")
    date = (f" Measured on {data['date']}, load average {data.get('loadavg', '?')} at the "
            "start." if data.get("date") else "")
    lines = [
        "## Migration mode (`python -m bench.migration`)", "",
        "The peers' setup (bench/peers.py): each gateway alone on CPU 0, the load client "
        "(bench/fastload.py) and bench/echo_stub.py on CPU 1, all on 127.0.0.1; "
        f"{client}. One gateway per variant, each with a SQLite state store of its own "
        "and one tenant: no `migration` block; `mode: off`; `mode: canary` with "
        f"`canary.share: {data['canary_share']:g}`; `mode: shadow` with "
        "`shadow.operations: [SendMessage, GetTask]` and `shadow.share` 0 or 1. The "
        "candidate is the primary: the same stub at the same address. The stub answers "
        "at once, so the gateway's core is the limit (calls/s: what a mode costs); the "
        f"shadow pair, the tenant without a migration and the canary are also measured "
        f"on an agent that answers in {AGENT_MS} ms, a gateway with time to spare, where "
        "the client's p50 shows whether it waits for the copies (the target reads that "
        "pair) and what the canary adds to a call's time. The load "
        "alternates a new conversation (SendMessage without a contextId) and a GetTask "
        f"on one of {data['seeded']} tasks made through the gateway before the rounds "
        "(in canary they belong to both agents), on "
        f"{t['connections']} connections, one call at a time each; {t['warmup']:g} s "
        f"warm-up, {t['duration']:g} s measured. Event loop `{data['loop']}`. "
        f"{data['rounds']} rounds, every gateway once per round, the order reversed "
        "every other round; each figure's best round, the ratios the median of the "
        f"rounds' paired ones.{date}", ""]
    lines += ["| " + " | ".join(COLUMNS) + " |",
              "|---|---|" + "---:|" * (len(COLUMNS) - 2)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(data)]
    lines += [""] + [f"- {line}" for line in target_lines(data["targets"])]
    lines += [f"- recorded: {line}" for line in recorded(data)]
    return "\n".join(lines).rstrip()
