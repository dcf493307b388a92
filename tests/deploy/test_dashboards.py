"""The Grafana dashboard and the Prometheus alert rules in deploy/ (issue 15, item 4), checked
against what a real gateway exposes.

A gateway runs in this process, from a config file, in front of the built-in demo agent. Real
calls make the labelled series exist: v0.3 and v1.0 JSON-RPC, a v0.3 stream, a REST call, a
v1.0 call that loses a field toward the v0.3 agent, errors from the agent, a push notification
relayed to a webhook, two tenants in migration mode (a canary with shadow copies to a
second demo agent, whose copies agree and disagree; a candidate that refuses connections,
falls back and is rolled back by itself), and two config reloads (one taken, one refused).
Then, from its `/metrics`:
  - every metric named in a panel query, a template variable or an alert rule is a series of an
    exposed family (a counter `a2a_gateway_x` is queried as `a2a_gateway_x_total`, a histogram
    as `_bucket`, `_sum`, `_count`); families no call here reaches (limit refusals) are still
    exposed, as HELP/TYPE lines without samples;
  - every label a query matches on or aggregates by is one of that family's labels (or a
    scrape label), and every literal value it matches is one the gateway gives that label.

`promtool check rules` (Debian's `prometheus` package) also runs when it is on PATH: on the
alert rules, and on every dashboard query turned into a recording rule (PromQL syntax).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from gateway.config.models import load_config
from gateway.demo.agent import start_demo_agent
from gateway.server.app import Server
from tests.deploy.deploy_support import DEPLOY, load_file
from tests.deploy.migration_traffic import CANARY_SHARE, m03, migrate, migrating, rpc, scrape
from tests.deploy.promql_support import (
    STRING,
    VARIABLE,
    Exposition,
    grouping_labels,
    label_values,
    matched_labels,
    matched_values,
    metric_names,
)
from tests.support.helpers import free_port, receiving_webhooks, v03, write_config
from tests.support.waiting import wait_until
from translators.operations import OPERATIONS

DASHBOARD = DEPLOY / "grafana" / "a2a-gateway-dashboard.json"
ALERTS = DEPLOY / "prometheus" / "a2a-gateway-alerts.yaml"
DS_UID = "${DS_PROMETHEUS}"
V10 = {"A2A-Version": "1.0"}

# Migration mode's families (issue 32): calls per arm and verdict, shadow comparisons and
# their differences, the canary share, rollbacks and promotions, fallbacks to the primary.
MIGRATION_FAMILIES = {
    "a2a_gateway_migration_calls", "a2a_gateway_migration_shadow_comparisons",
    "a2a_gateway_migration_shadow_differences", "a2a_gateway_migration_canary_share",
    "a2a_gateway_migration_moves", "a2a_gateway_migration_fallbacks",
}
# Every family the issues ask the dashboard to show: calls and errors by dialect pair, added
# and backend latency, open streams, stream events, losses, relay deliveries, limits tripped,
# backend errors, card cache, config reloads, and migration mode.
DASHBOARD_FAMILIES = {
    "a2a_gateway_calls", "a2a_gateway_added_seconds", "a2a_gateway_backend_duration_seconds",
    "a2a_gateway_open_streams", "a2a_gateway_stream_events",
    "a2a_gateway_translation_losses", "a2a_gateway_push_deliveries",
    "a2a_gateway_limit_refusals", "a2a_gateway_backend_errors", "a2a_gateway_card_cache_hits",
    "a2a_gateway_card_refreshes", "a2a_gateway_config_reloads", *MIGRATION_FAMILIES,
}
# ...and the alert rules: backend errors, relay failures, added latency, config reloads,
# a migration's rollback and its shadow agreement.
ALERT_FAMILIES = {
    "a2a_gateway_backend_errors", "a2a_gateway_push_deliveries", "a2a_gateway_added_seconds",
    "a2a_gateway_config_reloads", "a2a_gateway_migration_moves",
    "a2a_gateway_migration_shadow_comparisons",
}
SCRAPE_LABELS = {"instance", "job"}  # added by Prometheus when it scrapes
SEVERITIES = {"critical", "warning", "info"}
RULE_KEYS = {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
DURATION = re.compile(r"^(?:\d+(?:ms|[smhdwy]))+$")
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                    "__range_ms"}

def test_promql_scanner() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, operation) (rate('
            'a2a_gateway_added_seconds_bucket{instance=~"$instance", operation!~"a2a_gateway_x"}'
            '[5m]))) / on(job) a2a_gateway_calls_total')
    assert metric_names(expr) == {"a2a_gateway_added_seconds_bucket", "a2a_gateway_calls_total"}
    assert matched_labels(expr) == {"a2a_gateway_added_seconds_bucket": {"instance", "operation"}}
    assert grouping_labels(expr) == {"le", "operation", "job"}
    assert list(matched_values(expr)) == [
        ("a2a_gateway_added_seconds_bucket", "operation", "!~", {"a2a_gateway_x"})]


# --- what the gateway exposes -----------------------------------------------------------------

STREAMING = {op.name for op in OPERATIONS if op.streaming}


@pytest.fixture
async def candidate_agent() -> AsyncIterator[str]:
    """A second demo agent on 127.0.0.1: a migrating tenant's candidate, which words a
    task's first artifact differently (its shadow copies disagree)."""
    port = free_port()
    runner = await start_demo_agent("127.0.0.1", port, answer_variant="artifact-text")
    yield f"http://127.0.0.1:{port}/"
    await runner.cleanup()


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, asyncio.Queue[Any]]]:
    """A client's webhook on 127.0.0.1, for a relayed push delivery."""
    async with receiving_webhooks() as hook:
        yield hook


@pytest.fixture
async def exposition(demo_agent: str, candidate_agent: str,
                     webhook: tuple[str, asyncio.Queue[Any]],
                     tmp_path: Path) -> AsyncIterator[Exposition]:
    """`/metrics` of a real gateway (from a config file, so it can reload) in front of the
    demo agent, after real calls of several dialects, a relayed push, two tenants in
    migration mode and two reloads."""
    port = free_port()
    refusing = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    tenants = {
        "demo": v03(demo_agent),
        "shop": migrating(demo_agent, candidate_agent, mode="canary",
                           canary={"share": CANARY_SHARE},
                           shadow={"with_canary": True,
                                   "operations": ["SendMessage"]}),
        "gone": migrating(demo_agent, refusing, mode="canary", canary={"share": 1.0},
                           rollback={"window": 3600, "min_calls": 2, "max_error_rate": 0.5}),
    }
    raw = {"listen": {"http": f"127.0.0.1:{port}"}, "tenants": tenants,
           "default_tenant": "demo",
           "push_relay": {"webhook_allowlist": ["127.0.0.1"]}, "reload_interval": 0}
    path = write_config(tmp_path / "gateway.yaml", raw)
    server = Server(load_config(path), path)
    await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            sent = await rpc(http, base + "/", "message/send", m03("hi"))
            assert sent["result"]["parts"][0]["text"] == "echo: hi"
            # v1.0 → v0.3: a text part cannot name a file in v0.3, so that is a loss.
            v10 = await rpc(http, base + "/", "SendMessage", {"message": {
                "messageId": "m-v10", "role": "ROLE_USER",
                "parts": [{"text": "hi", "filename": "note.txt"}]}}, V10)
            assert v10["result"]["message"]["parts"][0]["text"] == "echo: hi"
            body = {"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": m03("s")}
            async with http.post(base + "/", json=body) as resp:
                assert resp.headers["Content-Type"].startswith("text/event-stream")
                events = [line async for line in resp.content if line.startswith(b"data:")]
            assert events
            # The unknown task: an error from the backend, over JSON-RPC and REST.
            unknown = await rpc(http, base + "/", "tasks/get", {"id": "nope"})
            assert unknown["error"]["code"] == -32001
            async with http.get(base + "/tasks/nope", headers=V10) as resp:
                assert resp.status == 404
            # A push notification relayed to the client's webhook (v1.0 client, v0.3 agent).
            url, received = webhook
            pushed = await rpc(http, base + "/", "SendMessage", {
                "message": {"messageId": "m-push", "role": "ROLE_USER",
                            "parts": [{"text": "task: push"}]},
                "configuration": {"taskPushNotificationConfig": {"url": url}}}, V10)
            assert "task" in pushed["result"]
            await asyncio.wait_for(received.get(), 10)
            await migrate(http, base)
            # Two reloads of the config file: one taken, one refused.
            watcher = server.watch_config()
            assert watcher is not None
            assert await watcher.reload("test")
            path.write_text("tenants: 5\n")
            assert not await watcher.reload("test")
            async def delivered() -> Exposition | None:  # once the webhook has answered
                exposed = Exposition(await scrape(http, base))
                return exposed if exposed.has("a2a_gateway_push_deliveries_total",
                                              outcome="delivered") else None

            yield await wait_until(delivered, "the push delivery counted")
    finally:
        await server.stop()


# --- the dashboard ----------------------------------------------------------------------------

def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def _queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in _panels(dashboard):
        for target in panel.get("targets", []):
            yield f"panel {panel['id']} {panel['title']!r} target {target['refId']}", target["expr"]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]
            yield f"variable {var['name']}", query["query"] if isinstance(query, dict) else query


def test_dashboard_structure() -> None:
    dash = _dashboard()
    assert 36 <= dash["schemaVersion"] <= 41
    assert dash["uid"] and dash["title"]
    assert {"name": "DS_PROMETHEUS", "type": "datasource", "pluginId": "prometheus"}.items() <= \
        dash["__inputs"][0].items()
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"]["uid"] == DS_UID, var["name"]

    ids: list[int] = []
    cells: dict[tuple[int, int], int] = {}
    for panel in _panels(dash):
        ids.append(panel["id"])
        pos = panel["gridPos"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, panel
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"panel {panel['id']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["id"]
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["datasource"]["uid"] == DS_UID, panel["id"]
        targets = panel["targets"]
        assert targets, f"panel {panel['id']} queries nothing"
        assert len({t["refId"] for t in targets}) == len(targets)
        for target in targets:
            assert target["datasource"]["uid"] == DS_UID and target["expr"].strip()
    assert len(ids) == len(set(ids)), "panel ids repeat"

    for where, expr in _queries(dash):
        for braced, bare in VARIABLE.findall(expr):
            name = braced or bare
            assert name in variables or name in GRAFANA_BUILTINS, f"{where}: ${name} undefined"
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), where


VALUES = label_values()


def _check_queries(queries: list[tuple[str, str]], exposed: Exposition) -> set[str]:
    """Every metric a query names is a series of an exposed family, matched and grouped on
    labels that family has; returns the families used."""
    used: set[str] = set()
    problems: list[str] = []
    for where, expr in queries:
        names = metric_names(expr)
        assert names, f"{where} queries no a2a_gateway metric: {expr}"
        families = {name: exposed.family_of(name) for name in names}
        for name, family in families.items():
            if family is None:
                stem = re.sub(r"_(total|bucket|sum|count|created)$", "", name)
                hint = f" (family {stem} is a {exposed.families[stem]})" \
                    if stem in exposed.families else ""
                problems.append(f"{where}: {name} is not in /metrics{hint}")
        known = {f for f in families.values() if f is not None}
        used |= known
        allowed = SCRAPE_LABELS.union(*(exposed.labels[f] for f in known)) if known else set()
        for name, labels in matched_labels(expr).items():
            family = families.get(name)
            if family is not None and (extra := labels - exposed.labels[family] - SCRAPE_LABELS):
                problems.append(f"{where}: {name} has no label {sorted(extra)}")
        if known and (extra := grouping_labels(expr) - allowed):
            problems.append(f"{where}: groups by {sorted(extra)}, which no metric in it has")
        for name, label, op, values in matched_values(expr):
            family = families.get(name)
            allowed_values = VALUES.get((family or "", label)) or VALUES.get(("*", label))
            if allowed_values is not None and (unknown := values - allowed_values):
                problems.append(f"{where}: {name}{{{label}{op}...}}: the gateway never gives "
                                f"{label} the value(s) {sorted(unknown)}")
            if label == "operation" and op == "!~" and values != STREAMING:
                problems.append(f"{where}: leaves out {sorted(values)}, not the streaming "
                                f"operations {sorted(STREAMING)}")
    assert not problems, "\n".join(problems)
    return used


async def test_dashboard_metrics_exist(exposition: Exposition) -> None:
    # The calls above made these series real, with their labels, not just declared.
    for family in ("a2a_gateway_calls", "a2a_gateway_added_seconds",
                   "a2a_gateway_backend_duration_seconds", "a2a_gateway_call_duration_seconds",
                   "a2a_gateway_stream_events", "a2a_gateway_translation_losses",
                   "a2a_gateway_backend_errors", "a2a_gateway_card_refreshes",
                   "a2a_gateway_open_streams", "a2a_gateway_limit_capacity",
                   "a2a_gateway_push_deliveries", "a2a_gateway_config_reloads",
                   *MIGRATION_FAMILIES):
        assert family in exposition.sampled, f"{family} has no sample after real calls"
    for series, labels in [
            ("a2a_gateway_calls_total", {"client_version": "0.3", "client_binding": "JSONRPC",
                                         "backend_version": "0.3", "outcome": "ok"}),
            ("a2a_gateway_calls_total", {"client_version": "1.0", "client_binding": "HTTP+JSON",
                                         "outcome": "TASK_NOT_FOUND"}),
            ("a2a_gateway_stream_events_total", {"operation": "SendStreamingMessage"}),
            ("a2a_gateway_translation_losses_total", {"direction": "request"}),
            ("a2a_gateway_backend_errors_total", {"tenant": "demo", "kind": "TASK_NOT_FOUND"}),
            ("a2a_gateway_push_deliveries_total", {"outcome": "delivered"}),
            ("a2a_gateway_config_reloads_total", {"outcome": "ok"}),
            ("a2a_gateway_config_reloads_total", {"outcome": "refused"}),
            ("a2a_gateway_migration_calls_total", {"tenant": "shop", "arm": "primary",
                                                   "verdict": "ok"}),
            ("a2a_gateway_migration_calls_total", {"tenant": "shop", "arm": "candidate",
                                                   "verdict": "ok"}),
            ("a2a_gateway_migration_shadow_differences_total", {"tenant": "shop",
                                                                "kind": "text"}),
            ("a2a_gateway_migration_canary_share", {"tenant": "shop"}),
            ("a2a_gateway_migration_fallbacks_total", {"tenant": "gone"}),
            ("a2a_gateway_migration_moves_total", {"tenant": "gone", "action": "rollback",
                                                   "by": "automatic"})]:
        assert exposition.has(series, **labels), f"no {series} {labels} after real calls"
    # The rolled-back canary shows as such, after the reload too.
    assert exposition.value("a2a_gateway_migration_canary_share", tenant="gone") == 0.0
    assert exposition.value("a2a_gateway_migration_canary_share", tenant="shop") == 0.5

    used = _check_queries(list(_queries(_dashboard())), exposition)
    assert used >= DASHBOARD_FAMILIES, f"the dashboard leaves out {DASHBOARD_FAMILIES - used}"


# --- the alert rules --------------------------------------------------------------------------

def _rules() -> list[dict[str, Any]]:
    doc = load_file(ALERTS)  # strict: a duplicate key is an error
    assert set(doc) == {"groups"} and doc["groups"]
    groups = [g["name"] for g in doc["groups"]]
    assert len(groups) == len(set(groups)), "group names repeat"
    rules = []
    for group in doc["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit"}, group["name"]
        assert group["rules"], f"group {group['name']} has no rules"
        rules.extend(group["rules"])
    return rules


def test_alert_rules_structure() -> None:
    rules = _rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)), "alert names repeat"
    for rule in rules:
        name = rule["alert"]
        assert set(rule) <= RULE_KEYS, f"{name}: unknown keys {set(rule) - RULE_KEYS}"
        assert re.fullmatch(r"A2AGateway[A-Za-z0-9]+", name), name
        assert isinstance(rule["expr"], str) and rule["expr"].strip(), name
        assert DURATION.match(str(rule["for"])), f"{name}: for: {rule['for']!r}"
        assert rule["labels"]["severity"] in SEVERITIES, name
        for key in ("summary", "description"):
            assert isinstance(rule["annotations"][key], str) and rule["annotations"][key], name
        assert "$" not in STRING.sub("", rule["expr"]), f"{name}: a Grafana variable in a rule"


async def test_alert_rule_metrics_exist(exposition: Exposition) -> None:
    used = _check_queries([(f"alert {r['alert']}", r["expr"]) for r in _rules()], exposition)
    assert used >= ALERT_FAMILIES, f"the alert rules leave out {ALERT_FAMILIES - used}"


# --- promtool, when there is one ----------------------------------------------------------------

def _promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    return tool


def _promtool_check(tool: str, path: Path) -> None:
    proc = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_alert_rules() -> None:
    _promtool_check(_promtool(), ALERTS)


def test_promtool_dashboard_queries(tmp_path: Path) -> None:
    """Each dashboard query, its Grafana variables filled in, must parse as PromQL: promtool
    parses them as the expressions of recording rules."""
    tool = _promtool()
    values = {"__rate_interval": "5m", "__interval": "1m", "__range": "6h", "instance": ".*",
              "tenant": ".*", "DS_PROMETHEUS": "prometheus"}
    rules = []
    for i, (_, expr) in enumerate(_queries(_dashboard())):
        filled = VARIABLE.sub(lambda m: values[m.group(1) or m.group(2)], expr)
        # Grafana's label_values(selector, label) is not PromQL: check its selector.
        filled = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", filled.strip())
        rules.append({"record": f"a2a_gateway_dashboard:query_{i}", "expr": filled})
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    _promtool_check(tool, path)
