"""The peer comparison's report: the flat metrics bench/targets.py reads, the
RESULTS.md section and the short table for the README (bench/peers.py runs it)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from bench import nginx
from bench.peers import (
    BARE_FOR,
    CONNECTIONS,
    LOAD_CORE,
    LOOPS,
    MIDDLE_CORE,
    NGINX_FOR,
    PEERS,
    STREAM_CONNECTIONS,
    TIMINGS,
    Run,
)


def _get(by_id: dict[str, dict[str, Any]], rid: str, key: str) -> float:
    r = by_id.get(rid)
    value = None if r is None else r["load"].get(key)
    return math.nan if value is None else float(value)


def _div(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def _paired_median(by_id: dict[str, dict[str, Any]], top: str, bottom: str) -> float:
    """The median over rounds of (``top``'s round ÷ ``bottom``'s same round): both were
    measured in the same round, seconds apart, so a window in which the machine ran
    faster or slower moves both. The best rounds' ratio instead can pair one peer's
    fast window with the other's ordinary one (it once gave 0.75 where the rounds gave
    0.46, 0.50 and 0.78). NaN without rounds on both sides."""
    tops, bottoms = (by_id.get(rid, {}).get("load", {}).get("rounds") for rid in (top, bottom))
    if not tops or not bottoms or len(tops) != len(bottoms):
        return math.nan
    return statistics.median(_div(t, b) for t, b in zip(tops, bottoms, strict=True))


def derive(data: dict[str, Any]) -> dict[str, float]:
    """The flat metrics `peers:*` that bench/targets.py reads."""
    by_id = {r["id"]: r for r in data.get("results", [])}
    primary = data.get("primary", "asyncio")
    m: dict[str, float] = {}
    for r in by_id.values():
        for key in ("rps", "p50_ms", "p99_ms", "cpu_ms_per_req", "errors", "events_per_s",
                    "first_event_p50_ms"):
            if key in r["load"]:
                m[f"{r['id']}.{key}"] = float(r["load"][key])

    def rid(kind: str, peer: str, loop: str = primary) -> str:
        return Run(kind, peer, loop).id

    for peer, label in (("gw-03-10", "translated"), ("gw-10-03", "translated_10_03"),
                        ("gw-same", "same")):
        rps = _get(by_id, rid("tput", peer), "rps")
        best = _div(rps, _get(by_id, rid("tput", BARE_FOR[peer]), "rps"))
        m[f"peers:tput.{label}_best_vs_bare"] = best
        paired = _paired_median(by_id, rid("tput", peer), rid("tput", BARE_FOR[peer]))
        m[f"peers:tput.{label}_vs_bare"] = best if math.isnan(paired) else paired
        m[f"peers:tput.{label}_vs_nginx"] = _div(rps, _get(
            by_id, rid("tput", NGINX_FOR[peer]), "rps"))
        m[f"peers:tput.{label}_cpu_ms_per_req"] = _get(by_id, rid("tput", peer),
                                                       "cpu_ms_per_req")
        # Requests per CPU-second of the hop, gateway ÷ bare: what the throughput ratio
        # would be with both saturating their core (robust to a shared, busy machine).
        m[f"peers:tput.{label}_per_cpu_vs_bare"] = _div(
            _get(by_id, rid("tput", BARE_FOR[peer]), "cpu_ms_per_req"),
            m[f"peers:tput.{label}_cpu_ms_per_req"])
        if data.get("other"):
            other = data["other"]
            m[f"peers:tput.{label}_vs_bare@{other}"] = _div(
                _get(by_id, rid("tput", peer, other), "rps"),
                _get(by_id, rid("tput", BARE_FOR[peer], other), "rps"))
    for peer, label in (("gw-03-10", "translated"), ("gw-same", "same")):
        m[f"peers:lat.{label}_added_p50_ms"] = (
            _get(by_id, rid("lat", peer), "p50_ms")
            - _get(by_id, rid("lat", BARE_FOR[peer]), "p50_ms"))
    m["peers:tput.bare_vs_nginx"] = _div(_get(by_id, rid("tput", "bare"), "rps"),
                                         _get(by_id, rid("tput", "nginx"), "rps"))
    m["peers:stream.translated_events_per_s"] = _get(by_id, rid("stream", "gw-03-10"),
                                                     "events_per_s")
    m["peers:stream.first_event_added_ms"] = (
        _get(by_id, rid("stream", "gw-03-10"), "first_event_p50_ms")
        - _get(by_id, rid("stream", "direct-echo"), "first_event_p50_ms"))
    m["peers:all.errors"] = float(sum(r["load"]["errors"] for r in by_id.values()))
    return m


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def readme_rows(metrics: dict[str, float], checks: list[dict[str, Any]]) -> list[list[str]]:
    """The short table for the README: the ratios and figures issue 14 asks for."""
    def target(metric: str) -> str:
        for c in checks:
            if c["metric"] == metric:
                return f"{c['status']} (target {c['op']} {c['limit']:g})"
        return ""

    g = metrics.get
    ids = dict.fromkeys(Run("tput", name, loop).id for name in (
        "direct", "nginx", "bare", "gw-same", "bare-echo", "gw-03-10") for loop in LOOPS)
    rates = [[f"req/s, {CONNECTIONS} connections: {rid.partition(':tput:')[2]}",
              _f(g(f"{rid}.rps"), 0), "recorded"] for rid in ids if f"{rid}.rps" in metrics]
    return rates + [
        ["translated ÷ bare aiohttp (throughput, median of the rounds' paired ratios)",
         _f(g("peers:tput.translated_vs_bare"), 2), target("peers:tput.translated_vs_bare")],
        ["same-dialect ÷ bare aiohttp (throughput, median of the rounds' paired ratios)",
         _f(g("peers:tput.same_vs_bare"), 2), target("peers:tput.same_vs_bare")],
        ["translated ÷ bare aiohttp, best round ÷ best round",
         _f(g("peers:tput.translated_best_vs_bare"), 2), "recorded"],
        ["same-dialect ÷ bare aiohttp, best round ÷ best round",
         _f(g("peers:tput.same_best_vs_bare"), 2), "recorded"],
        ["translated ÷ bare aiohttp, requests per CPU-second of the hop",
         _f(g("peers:tput.translated_per_cpu_vs_bare"), 2), "recorded"],
        ["same-dialect ÷ bare aiohttp, requests per CPU-second of the hop",
         _f(g("peers:tput.same_per_cpu_vs_bare"), 2), "recorded"],
        ["translated ÷ nginx (throughput, physical limit)",
         _f(g("peers:tput.translated_vs_nginx"), 2), "recorded"],
        ["same-dialect ÷ nginx", _f(g("peers:tput.same_vs_nginx"), 2), "recorded"],
        ["added p50 at 1 connection, translated vs bare (ms)",
         _f(g("peers:lat.translated_added_p50_ms"), 3),
         target("peers:lat.translated_added_p50_ms")],
        ["added p50 at 1 connection, same-dialect vs bare (ms)",
         _f(g("peers:lat.same_added_p50_ms"), 3), target("peers:lat.same_added_p50_ms")],
        ["translated SSE events/s through one core",
         _f(g("peers:stream.translated_events_per_s"), 0),
         target("peers:stream.translated_events_per_s")],
        ["first event, translated stream, 16-way: added vs backend (ms)",
         _f(g("peers:stream.first_event_added_ms"), 2),
         target("peers:stream.first_event_added_ms")],
        ["gateway CPU per translated request (ms)",
         _f(g("peers:tput.translated_cpu_ms_per_req"), 3), "recorded"],
        ["gateway CPU per same-dialect request (ms)",
         _f(g("peers:tput.same_cpu_ms_per_req"), 3), "recorded"],
    ] + [[f"{'translated' if key.startswith('peers:tput.translated_vs') else 'same-dialect'}"
          f" ÷ bare aiohttp, both on {key.partition('@')[2]}", _f(value, 2), "recorded"]
         for key, value in sorted(metrics.items())
         if "@" in key and key.startswith(("peers:tput.translated_vs_bare@",
                                           "peers:tput.same_vs_bare@"))]


def markdown(data: dict[str, Any], metrics: dict[str, float],
             checks: list[dict[str, Any]]) -> str:
    """The peers section of bench/RESULTS.md (with the short table for the README)."""
    from bench.report import md_table
    primary, other = data.get("primary", "asyncio"), data.get("other")
    rounds = data.get("rounds", 1)
    if data.get("skipped"):
        return ("## Peers: one core for the middle hop\n\nNot measured: "
                f"{data.get('nginx')} (the fixed-answer backend is nginx).\n")
    by_id = {r["id"]: r for r in data["results"]}

    def cell(kind: str, peer: str, key: str, loop: str = primary, digits: int = 0) -> str:
        return _f(_get(by_id, Run(kind, peer, loop).id, key), digits)

    ngx_missing = "peers:tput:nginx" not in by_id
    rows = []
    for name, peer in PEERS.items():
        row = [f"{name}", peer.description,
               cell("tput", name, "rps"), cell("tput", name, "p50_ms", digits=2),
               cell("tput", name, "cpu_ms_per_req", digits=3),
               _f(100 * _get(by_id, Run("tput", name, primary).id, "hop_cpu_util"), 0),
               cell("lat", name, "p50_ms", digits=3)]
        if other:
            row.append(cell("tput", name, "rps", other) if peer.hop in ("bare", "gw")
                       else "")
        rows.append(row)
    header = ["peer", "path", f"req/s ({CONNECTIONS} conn)", "p50 ms",
              "hop CPU ms/req", "hop CPU %", "p50 ms (1 conn)"]
    if other:
        header.append(f"req/s on {other}")
    stream_rows = [[name, cell("stream", name, "events_per_s"),
                    cell("stream", name, "rps", digits=1),
                    cell("stream", name, "first_event_p50_ms", digits=2),
                    cell("stream", name, "cpu_ms_per_req", digits=2)]
                   for name in ("direct-echo", "bare-echo", "gw-03-10")]

    readme = readme_rows(metrics, checks)
    loop_lines = []
    for loop, seen in data.get("loops", {}).items():
        loop_lines.append(f"`A2A_GATEWAY_LOOP={loop}`: uvloop mapped in the gateway: "
                          f"{'yes' if seen.get('gw') else 'no'}, in the bare proxy: "
                          f"{'yes' if seen.get('bare') else 'no'}.")
    parts = [
        "## Peers: one core for the middle hop",
        "",
        f"Same load, same backend for every peer. The middle hop (nginx proxy, bare aiohttp "
        f"proxy or gateway) is pinned to CPU {MIDDLE_CORE} (`taskset`); the load client "
        f"(bench/fastload.py, raw HTTP/1.1 on uvloop) and the fixed-answer backends share CPU "
        f"{LOAD_CORE}: nginx `return 200` (bench/nginx.py) for the calls the gateway forwards "
        "as sent, and bench/echo_stub.py, which echoes the JSON-RPC id, for translated calls "
        "and streams (the gateway checks the id of the answer against the one it sent); each "
        "gateway path is compared with the bare proxy and nginx in front of the same stub. "
        "Unary: a small "
        f"`SendMessage`/`message/send`, {CONNECTIONS} keep-alive connections, closed loop, "
        f"{TIMINGS['tput'].warmup:g} s warm-up then {TIMINGS['tput'].duration:g} s measured; "
        f"latency: 1 connection, {TIMINGS['lat'].duration:g} s. Streams: "
        f"{STREAM_CONNECTIONS} connections, each stream {nginx.STREAM_EVENTS} small SSE "
        f"events from the backend, the client counting them, {TIMINGS['stream'].duration:g} "
        f"s. Gateway and bare proxy on `{primary}`"
        + (f" (and `{other}` for the last column)" if other else "") + ". "
        + (f"Each `{primary}` figure is the peer's best of {rounds} rounds, every peer "
           "measured in turn each round (req/s, events/s: the highest; p50 at 1 connection: "
           "the lowest; all rounds in last-run.json): one window can lose a third of the "
           "hop's core to other work on this shared machine. The throughput ratios to the "
           "bare proxy that the targets read are the median of the rounds' paired ratios "
           "(each round's gateway ÷ the same round's bare proxy): one fast window of one "
           "peer cannot carry them. " if rounds > 1 else "")
        + "`hop CPU ms/req` = utime+stime of the middle hop (/proc/<pid>/stat, with "
        "children) over the measured window ÷ requests; `hop CPU %` below ~95 means the "
        "middle hop was not saturated (waiting, or its core taken by another process: the "
        "machine is shared, see the load average). nginx: " + str(data.get("nginx"))
        + ("" if not ngx_missing else " — **nginx row missing**") + ".",
        "",
        " ".join(loop_lines),
        "",
        "### Table for the README",
        "",
        md_table(["measure", "value", "target"], readme, left=1),
        "",
        "### Unary",
        "",
        md_table(header, rows, left=2),
        "",
        "### Streams (16 in flight)",
        "",
        md_table(["peer", "events/s", "streams/s", "first event p50 ms", "hop CPU ms/stream"],
                 stream_rows),
        "",
        "A load client on the same core as the backend limits the `direct` and `nginx` rows "
        "(the client, not nginx, is the bottleneck there: see hop CPU), so `÷ nginx` is a "
        "lower bound of the distance to the physical limit.",
        "",
    ]
    return "\n".join(parts)
