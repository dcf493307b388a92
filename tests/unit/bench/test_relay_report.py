"""The push relay bench's pure pieces (bench/relay_report.py, RELAY_TARGETS): one
round's raw timings in figures, the metrics and paired ratios the targets read, the
RESULTS.md section."""

from __future__ import annotations

import math
from typing import Any

from bench import relay_report
from bench.report import put_section, section
from bench.targets import RELAY_TARGETS, TARGETS, evaluate


def raw(latencies: list[float], *, delivered: int = 4, accepted: int = 4,
        order: dict[str, list[int]] | None = None, cpu: float = 0.004) -> dict[str, Any]:
    return {
        "serial": {"latency_ms": [2.0, 1.0, 3.0, 4.0], "ack_ms": [0.5, 0.7, 0.6],
                   "errors": []},
        "load": {"posted": 4, "accepted": accepted, "delivered": delivered,
                 "accept_s": 0.5, "deliver_s": 2.0, "latency_ms": latencies,
                 "order": order if order is not None else {"a": [0, 1], "b": [0, 1]},
                 "per_task": 2, "cpu_s": {"gateway": cpu * 3 / 4, "redis": cpu / 4},
                 "errors": []}}


def row(store: str, relay: str, round_no: int, **figures: float) -> dict[str, Any]:
    base = relay_report.summarize(raw([10.0, 20.0, 30.0, 40.0]))
    return {**base, "store": store, "relay": relay, "round": round_no, **figures}


def test_disorder_counts_repeats_and_steps_back_not_gaps() -> None:
    assert relay_report.disorder({"a": [0, 1, 2], "b": [0, 2]}) == 0  # a gap is "missing"
    assert relay_report.disorder({"a": [0, 1, 1, 2]}) == 1  # delivered twice
    assert relay_report.disorder({"a": [1, 0, 2], "b": [0, 1]}) == 1  # out of order


def test_a_round_in_figures() -> None:
    got = relay_report.summarize(raw([10.0, 40.0, 20.0, 30.0]))
    assert got["serial_p50_ms"] == 2.0 and got["serial_p99_ms"] == 4.0  # nearest rank
    assert got["ack_p50_ms"] == 0.6
    assert got["accepted_per_s"] == 8.0 and got["delivered_per_s"] == 2.0
    assert got["load_p50_ms"] == 20.0 and got["load_p99_ms"] == 40.0
    assert got["cpu_ms_per_notification"] == 1.0  # gateway + redis-server, 4 delivered
    assert got["errors"] == 0 and got["missing"] == 0


def test_missing_repeated_and_refused_notifications_are_errors() -> None:
    broken = raw([10.0, 20.0, 30.0], delivered=3, order={"a": [0, 1, 1], "b": [0]})
    broken["load"]["errors"] = ["HTTP 503: queue full"]
    got = relay_report.summarize(broken)
    assert got["missing"] == 1
    assert got["errors"] == 1 + 1 + 1  # refused, missing, delivered twice
    assert got["error_sample"] == ["HTTP 503: queue full"]


def test_nothing_delivered_gives_no_rate_and_no_cpu_figure() -> None:
    got = relay_report.summarize(raw([], delivered=0))
    assert math.isnan(got["delivered_per_s"]) and math.isnan(got["cpu_ms_per_notification"])
    assert got["errors"] == 4


def test_metrics_take_each_figure_best_and_ratios_paired_by_round() -> None:
    rows = [
        # Round 0: durable half as fast, CPU 1.5x; round 1: the machine was busy for both.
        row("sqlite", "memory", 0, delivered_per_s=1000.0, accepted_per_s=1000.0,
            cpu_ms_per_notification=0.5, serial_p50_ms=1.5, serial_p99_ms=3.0),
        row("sqlite", "durable", 0, delivered_per_s=500.0, accepted_per_s=800.0,
            cpu_ms_per_notification=0.75, serial_p50_ms=5.0, serial_p99_ms=9.0),
        row("sqlite", "memory", 1, delivered_per_s=400.0, accepted_per_s=400.0,
            cpu_ms_per_notification=1.0, serial_p50_ms=2.0, serial_p99_ms=2.5),
        row("sqlite", "durable", 1, delivered_per_s=320.0, accepted_per_s=400.0,
            cpu_ms_per_notification=1.2, serial_p50_ms=4.5, serial_p99_ms=10.0, errors=2),
    ]
    m = relay_report.derive(rows)
    assert m["relay:sqlite.memory.delivered_per_s"] == 1000.0  # the best round's
    assert m["relay:sqlite.durable.cpu_ms_per_notification"] == 0.75
    assert m["relay:sqlite.memory.serial_p99_ms"] == 2.5
    # Paired: rounds give 2.0 and 1.25 (memory ÷ durable rate); the median of two.
    assert m["relay:sqlite.durable.time_vs_memory"] == 1.625
    assert m["relay:sqlite.durable.accept_time_vs_memory"] == (1.25 + 1.0) / 2
    assert m["relay:sqlite.durable.cpu_vs_memory"] == (1.5 + 1.2) / 2
    assert m["relay:sqlite.durable.added_p50_ms"] == 4.5 - 1.5  # best minus best
    assert m["relay:sqlite.durable.added_p99_ms"] == 9.0 - 2.5
    assert m["relay:sqlite.durable.errors"] == 2 and m["relay:all.errors"] == 2
    assert not any(key.startswith("relay:redis") for key in m)  # no redis-server: no rows


def test_without_the_baseline_no_ratio_is_made_and_the_targets_are_not_checked() -> None:
    m = relay_report.derive([row("sqlite", "durable", 0)])
    assert math.isnan(m["relay:sqlite.durable.time_vs_memory"])
    checked = {t["metric"]: t["status"] for t in evaluate(m, RELAY_TARGETS)}
    assert checked["relay:sqlite.durable.time_vs_memory"] == "N/A"
    assert checked["relay:redis.durable.cpu_vs_memory"] == "N/A"
    assert checked["relay:all.errors"] == "PASS"


def test_the_targets_are_twice_the_in_memory_relay_per_notification() -> None:
    metrics = {"relay:sqlite.durable.time_vs_memory": 2.05,
               "relay:sqlite.durable.cpu_vs_memory": 1.9,
               "relay:redis.durable.time_vs_memory": 2.0, "relay:all.errors": 1.0}
    checked = {t["metric"]: t["status"] for t in evaluate(metrics, RELAY_TARGETS)}
    assert checked == {"relay:sqlite.durable.time_vs_memory": "FAIL",
                       "relay:sqlite.durable.cpu_vs_memory": "PASS",
                       "relay:redis.durable.time_vs_memory": "PASS",
                       "relay:redis.durable.cpu_vs_memory": "N/A",
                       "relay:all.errors": "FAIL"}
    assert all(t in TARGETS for t in RELAY_TARGETS)  # bench.run checks them too


def test_the_section_shows_every_round_the_targets_and_what_is_recorded() -> None:
    rows = [row("sqlite", "memory", 0, delivered_per_s=1078.0, load_p50_ms=21.46),
            row("sqlite", "durable", 0, delivered_per_s=525.0, serial_p50_ms=5.31)]
    metrics = relay_report.derive(rows)
    data = {"baseline": "cbabf7f1c699b2771d36f49e670c8cee6afd1a8c",
            "sizes": {"serial": 200, "warmup": 20, "tasks": 16, "per_task": 100,
                      "timeout": 60.0},
            "rows": rows, "missing": ["redis: no redis-server (A2A_TEST_REDIS_SERVER or PATH)"],
            "metrics": metrics, "targets": evaluate(metrics, RELAY_TARGETS)}
    text = relay_report.markdown(data)
    assert "commit cbabf7f" in text and "200 notifications one at a time" in text
    assert "| sqlite | memory | 0 | 8 | 1,078 | 21.46 / 40.00 | 2.00 / 4.00 | 0.60 | 1.000 | 0 |" \
        in text
    assert "| sqlite | durable | 0 | 8 | 525 |" in text
    assert ("- push relay on sqlite: time per delivered notification under load, durable "
            "queue ÷ in-memory relay ≤ 2: 2.05 — **FAIL**") in text
    assert "- redis: no redis-server" in text
    assert ("- recorded: sqlite: added latency per delivery, one at a time, p50 (durable "
            "minus in-memory, ms): +3.31") in text
    # bench.relay and bench.run write it between its markers, leaving the rest alone.
    doc = put_section("# Benchmark results\n\nkept\n", "push-relay", text)
    assert section(doc, "push-relay") == text and "kept" in doc
