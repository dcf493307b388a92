"""The migration mode bench's pure pieces (bench/migration_report.py, MIGRATION_TARGETS,
the configs and load of bench/migration.py, the echo stub's `/m10` answers): the paired
ratios the targets read, the counters that show each variant did what its mode says,
the RESULTS.md section."""

from __future__ import annotations

import json
from typing import Any

from bench import echo_stub, fastload, migration, migration_report
from bench.report import put_section, section
from bench.targets import MIGRATION_TARGETS, TARGETS, evaluate
from gateway.config.models import GatewayConfig


def unary(round_no: int, variant: str, rps: float, p50: float, cpu: float,
          errors: int = 0) -> dict[str, Any]:
    return migration_report.row(round_no, variant, {
        "rps": rps, "p50_ms": p50, "p90_ms": 2 * p50, "p99_ms": 4 * p50,
        "cpu_ms_per_req": cpu, "hop_cpu_util": 0.99, "ok": 1000, "errors": errors,
        "cpu_s": {"hop": 1.0}, "wall_s": 2.5})


def run_data() -> dict[str, Any]:
    rows = []
    # Round 1 is slower for every variant (the machine was busy): the paired ratios keep
    # each round's own comparison.
    for r, slow in enumerate([1.0, 0.5, 1.0]):
        rows += [unary(r, "none", 8000 * slow, 0.9 / slow, 0.12),
                 unary(r, "off", 7920 * slow, 0.9 / slow, 0.12),
                 unary(r, "canary", 4000 * slow, 1.8 / slow, 0.24),
                 unary(r, "shadow-0", 4400 * slow, 1.7 / slow, 0.22),
                 unary(r, "shadow-100", 2800 * slow, 2.8 / slow, 0.36),
                 unary(r, "wait-none", 1250.0, 6.0, 0.2),
                 unary(r, "wait-canary", 1240.0, 6.0 * (1.005 + 0.005 * r), 0.23),
                 unary(r, "wait-shadow-0", 1230.0, 6.5, 0.26),
                 unary(r, "wait-shadow-100", 1200.0, 6.5 * (1.01 + 0.01 * r), 0.41)]
    counted = {"none": {}, "off": {},
               "canary": {"calls.primary": 700.0, "calls.candidate": 300.0, "share": 0.3},
               "shadow-0": {"calls.primary": 1000.0}, "wait-none": {},
               "wait-canary": {"calls.primary": 350.0, "calls.candidate": 150.0,
                               "share": 0.3},
               "shadow-100": {"calls.primary": 1000.0, "shadow.agree": 990.0,
                              "shadow.skipped": 10.0},
               "wait-shadow-0": {"calls.primary": 500.0},
               "wait-shadow-100": {"calls.primary": 500.0, "shadow.agree": 500.0}}
    data = {"loop": "asyncio", "rounds": 3, "path": "same", "canary_share": 0.3,
            "seeded": 48, "date": "2026-12-05", "loadavg": "0.50 0.40 0.30",
            "timing": {"warmup": 0.5, "duration": 2.5, "connections": 8},
            "rows": rows, "counted": counted}
    data["metrics"] = migration_report.derive(data)
    data["targets"] = evaluate(data["metrics"], MIGRATION_TARGETS)
    return data


def test_a_row_keeps_the_figures_not_the_load_clients_raw_output() -> None:
    got = unary(0, "canary", 4000.0, 1.8, 0.24)
    assert got["variant"] == "canary" and got["rps"] == 4000.0 and got["p50_ms"] == 1.8
    assert "cpu_s" not in got and "wall_s" not in got


def test_metrics_take_the_best_round_and_the_median_of_paired_rounds() -> None:
    m = run_data()["metrics"]
    assert m["migration:none.rps"] == 8000.0  # the best round's
    assert m["migration:canary.p50_ms"] == 1.8
    # Every round says the same of each pair, whatever the machine did to that round.
    assert abs(m["migration:tput.off_vs_none"] - 0.99) < 1e-9
    assert abs(m["migration:tput.canary_vs_plain"] - 0.5) < 1e-9
    assert abs(m["migration:cpu.canary_vs_plain"] - 2.0) < 1e-9
    # The shadow target reads the pair on the agent that takes its time (median 1.02).
    assert abs(m["migration:p50.shadow100_vs_shadow0"] - 1.02) < 1e-9
    assert abs(m["migration:p50.shadow100_vs_shadow0_busy"] - 2.8 / 1.7) < 1e-9
    # What the canary adds to a call's time on an agent that takes its own (median 1.01).
    assert abs(m["migration:p50.canary_vs_plain_agent"] - 1.01) < 1e-9
    assert m["migration:all.errors"] == 0


def test_targets_pass_and_fail_on_the_paired_ratios() -> None:
    status = {t["metric"]: t["status"] for t in run_data()["targets"]}
    assert status == {"migration:tput.off_vs_none": "PASS",
                      "migration:tput.canary_vs_plain": "FAIL",
                      "migration:p50.shadow100_vs_shadow0": "PASS",
                      "migration:all.errors": "PASS"}
    assert all(t in TARGETS for t in MIGRATION_TARGETS)  # bench.run checks them too


def test_a_variant_missing_from_a_round_gives_no_ratio_for_it() -> None:
    rows = [unary(0, "none", 8000.0, 0.9, 0.12), unary(1, "off", 7900.0, 0.9, 0.12)]
    m = migration_report.derive({"rows": rows})
    assert m["migration:tput.off_vs_none"] != m["migration:tput.off_vs_none"]  # NaN
    assert m["migration:none.rps"] == 8000.0


METRICS_PAGE = """\
# HELP a2a_gateway_migration_calls_total Calls of tenants in migration mode
# TYPE a2a_gateway_migration_calls_total counter
a2a_gateway_migration_calls_total{arm="primary",tenant="shop",verdict="ok"} 700.0
a2a_gateway_migration_calls_total{arm="candidate",tenant="shop",verdict="ok"} 290.0
a2a_gateway_migration_calls_total{arm="candidate",tenant="shop",verdict="error"} 10.0
a2a_gateway_migration_calls_created{arm="primary",tenant="shop",verdict="ok"} 1.7e+09
a2a_gateway_migration_shadow_comparisons_total{tenant="shop",verdict="agree"} 42.0
a2a_gateway_migration_canary_share{tenant="shop"} 0.3
a2a_gateway_calls_total{tenant="shop"} 1000.0
"""


def test_counters_are_read_from_the_metrics_page_by_arm_and_verdict() -> None:
    assert migration_report.counters(METRICS_PAGE) == {
        "calls.primary": 700.0, "calls.candidate": 300.0, "shadow.agree": 42.0,
        "share": 0.3}


def test_a_variant_that_did_not_do_what_its_mode_says_is_named() -> None:
    assert migration_report.not_as_configured(run_data()["counted"]) == []
    wrong = migration_report.not_as_configured({
        "none": {"calls.primary": 5.0},
        "canary": {"calls.primary": 1000.0, "share": 0.0},
        "shadow-100": {"calls.primary": 1000.0},
        "shadow-0": {"calls.primary": 1000.0, "shadow.agree": 1.0},
        "wait-canary": {"calls.primary": 500.0, "share": 0.3}})
    assert wrong == ["none: calls counted by a migration", "canary: not both agents called",
                     "canary: its share is 0 (rolled back?)", "shadow-100: no copy compared",
                     "shadow-0: copies made", "wait-canary: not both agents called"]
    assert migration_report.not_as_configured({"wait-shadow-0": {"shadow.skipped": 2.0},
                                               "wait-none": {"calls.candidate": 1.0}}) == [
        "wait-shadow-0: copies made", "wait-none: calls counted by a migration"]


def test_the_section_says_how_it_was_measured_and_what_it_found() -> None:
    data = run_data()
    text = migration_report.markdown(data)
    assert text.startswith("## Migration mode (`python -m bench.migration`)")
    assert "`canary.share: 0.3`" in text and "Measured on 2026-12-05" in text
    assert "| 1 | mode: canary | 2,000 | 3.60 |" in text  # round 1, half as fast
    assert "canary: calls/s ≥ 95% of a plain call (the tenant without a migration): " \
           "0.500 — **FAIL**" in text
    assert "- recorded: canary: 30% of 1,000 calls served by the candidate" in text
    assert "- recorded: client p50, canary ÷ no migration, agent answering in 5 ms (a " \
           "gateway with time to spare) (median of paired rounds): 1.010" in text
    assert "| 0 | mode: canary; agent 5 ms | 1,240 |" in text
    doc = put_section("# Benchmark results\n\nkept\n", "migration-mode", text)
    assert section(doc, "migration-mode") == text and "kept" in doc


def test_each_variants_config_is_one_the_gateway_accepts_with_its_mode() -> None:
    modes = {}
    for variant in migration_report.VARIANTS:
        raw = migration.gateway_config(variant, 8000, 9000, migration.HERE / "x.db")
        tenant = GatewayConfig.model_validate(raw).tenants[migration.TENANT]
        m = tenant.migration
        modes[variant] = None if m is None else (m.mode, m.canary.share, m.shadow.share)
        if m is not None:  # the candidate is the primary
            assert m.candidate.url == tenant.backend.url
            assert m.shadow.operations == (["SendMessage", "GetTask"] if m.mode == "shadow"
                                           else ["GetTask"])
        waits = variant.startswith("wait-")
        assert tenant.backend.url == "http://127.0.0.1:9000/m10" + ("/wait5" if waits else "")
    assert modes == {"none": None, "off": ("off", 0.1, 1.0), "canary": ("canary", 0.3, 1.0),
                     "shadow-0": ("shadow", 0.1, 0.0), "shadow-100": ("shadow", 0.1, 1.0),
                     "wait-none": None, "wait-canary": ("canary", 0.3, 1.0),
                     "wait-shadow-0": ("shadow", 0.1, 0.0),
                     "wait-shadow-100": ("shadow", 0.1, 1.0)}


def test_the_load_alternates_new_conversations_and_get_task_on_known_tasks() -> None:
    sent = [json.loads(b) for b in migration.bodies("10", ["t-1", "t-2"])]
    assert [b["method"] for b in sent] == ["SendMessage", "GetTask"] * 2
    assert [b["params"].get("id") for b in sent] == [None, "t-1", None, "t-2"]
    assert all("contextId" not in b["params"].get("message", {}) for b in sent)
    old = [json.loads(b)["method"] for b in migration.bodies("03", ["t-1"])]
    assert old == ["message/send", "tasks/get"]
    spec = {"port": 1, "path": "/shop", "headers": {}, "bodies": ["a", "bb"]}
    assert [r.split(b"\r\n\r\n")[1] for r in fastload._requests(spec)] == [b"a", b"bb"]


def test_the_stub_starts_a_new_conversation_per_message_and_returns_the_task_asked() -> None:
    first = json.loads(echo_stub.migration_answer(False, migration.send_body("10").encode()))
    second = json.loads(echo_stub.migration_answer(False, migration.send_body("10").encode()))
    ids = [(a["result"]["task"]["id"], a["result"]["task"]["contextId"])
           for a in (first, second)]
    assert ids[0] != ids[1] and ids[0][0].removeprefix("t-") == ids[0][1].removeprefix("c-")
    got = json.loads(echo_stub.migration_answer(True, migration.get_body("03", "t-7").encode()))
    assert got["result"] == {"kind": "task", "id": "t-7", "contextId": "c-7",
                             "status": {"state": "completed"}}
