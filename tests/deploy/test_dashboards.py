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
import dataclasses
import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, get_args

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from gateway.config.models import load_config
from gateway.demo.agent import start_demo_agent
from gateway.migration.control import Move
from gateway.migration.stats import Verdict
from gateway.migration.sticky import Arm, arm_for
from gateway.relay.delivery import RelayCounters
from gateway.server.app import Server
from tests.deploy.deploy_support import DEPLOY, load_file
from tests.support.helpers import free_port, receiving_webhooks, v03, write_config
from tests.support.waiting import wait_until
from translators.answer_diff import KINDS as DIFFERENCE_KINDS
from translators.errors import ERROR_KINDS
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

# --- PromQL, just enough of it ----------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GATEWAY_NAME = re.compile(r"(?<![A-Za-z0-9_:])a2a_gateway_[A-Za-z0-9_:]*")
_SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])(a2a_gateway_[A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER_VALUE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)")


def _unquoted(expr: str) -> str:
    """The expression with every string literal emptied: a label value never reads as a name."""
    return _STRING.sub('""', expr)


def metric_names(expr: str) -> set[str]:
    return set(_GATEWAY_NAME.findall(_unquoted(expr)))


def matched_labels(expr: str) -> dict[str, set[str]]:
    """metric name -> the label names its selectors match on."""
    found: dict[str, set[str]] = {}
    for name, body in _SELECTOR.findall(_unquoted(expr)):
        found.setdefault(name, set()).update(_MATCHER.findall(body))
    return found


def matched_values(expr: str) -> Iterator[tuple[str, str, str, set[str]]]:
    """(metric, label, operator, values) for every matcher of a selector; a regex matcher's
    values are its alternatives when it is a plain `a|b|c`, else nothing to check."""
    for name, body in _SELECTOR.findall(expr):
        for label, op, value in _MATCHER_VALUE.findall(body):
            if op in ("=~", "!~") and not re.fullmatch(r"[A-Za-z0-9_.+ ]*(?:\|[A-Za-z0-9_.+ ]*)*",
                                                     value):
                continue
            yield name, label, op, set(value.split("|")) if op in ("=~", "!~") else {value}


def grouping_labels(expr: str) -> set[str]:
    labels: set[str] = set()
    for body in _GROUPING.findall(_unquoted(expr)):
        labels.update(part.strip() for part in body.split(",") if part.strip())
    return labels


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


def _label_values() -> dict[tuple[str, str], set[str]]:
    """(family or "*", label) -> the values the gateway gives it, from its own tables: a
    matcher on a value that never occurs selects nothing, and an alert on it never fires."""
    reasons = {kind.reason for kind in ERROR_KINDS}
    return {
        ("a2a_gateway_calls", "outcome"): reasons | {"ok", "CLIENT_CANCELLED"},  # observe.outcome_of
        ("a2a_gateway_backend_errors", "kind"): reasons,
        ("a2a_gateway_push_deliveries", "outcome"): {
            f.name for f in dataclasses.fields(RelayCounters)},
        ("a2a_gateway_config_reloads", "outcome"): {"ok", "refused"},  # lifecycle.ConfigWatcher
        ("a2a_gateway_card_refreshes", "outcome"): {"ok", "error"},  # cards.backend
        ("a2a_gateway_migration_calls", "arm"): set(get_args(Arm)),
        ("a2a_gateway_migration_calls", "verdict"): set(get_args(Verdict)),
        ("a2a_gateway_migration_shadow_comparisons", "verdict"): {  # migration.shadow.Shadow
            "agree", "disagree", "skipped", "failed"},
        ("a2a_gateway_migration_shadow_differences", "kind"): {  # shadow: latency_ratio's
            *DIFFERENCE_KINDS, "latency"},
        ("a2a_gateway_migration_moves", "action"): set(get_args(Move)),
        ("*", "operation"): {op.name for op in OPERATIONS},
        ("*", "client_version"): {"0.3", "1.0"},
        ("*", "backend_version"): {"0.3", "1.0", "none"},  # metrics.record_call: "none"
    }


SERIES_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",),
                   "histogram": ("_bucket", "_sum", "_count", "_created"),
                   "summary": ("", "_sum", "_count", "_created"), "info": ("_info",),
                   "untyped": ("",)}


class Exposition:
    """A `/metrics` text, by family: the series names each family answers to, and labels."""

    def __init__(self, text: str) -> None:
        self.families: dict[str, str] = {}  # family -> type
        self.series: dict[str, str] = {}  # series name -> family
        self.labels: dict[str, set[str]] = {}
        self.sampled: set[str] = set()  # families with at least one sample
        self.samples: list[tuple[str, dict[str, str], float]] = []
        for family in text_string_to_metric_families(text):
            self.families[family.name] = family.type
            for suffix in SERIES_SUFFIXES.get(family.type, ("",)):
                self.series[family.name + suffix] = family.name
            labels = self.labels.setdefault(family.name, set())
            for sample in family.samples:
                labels.update(sample.labels)
                self.sampled.add(family.name)
                self.samples.append((sample.name, dict(sample.labels), sample.value))
            if family.type == "histogram":
                labels.add("le")
        # Families without a sample yet have no label in the text: take the declared ones.
        for name, declared in _declared_labels().items():
            if name in self.labels:
                self.labels[name].update(declared)

    def has(self, series: str, **labels: str) -> bool:
        return any(name == series and labels.items() <= got.items()
                   for name, got, _ in self.samples)

    def value(self, series: str, **labels: str) -> float:
        """The sum of the samples of ``series`` with these labels (0 for none)."""
        return sum(value for name, got, value in self.samples
                   if name == series and labels.items() <= got.items())

    def family_of(self, series: str) -> str | None:
        return self.series.get(series)


def _declared_labels() -> dict[str, set[str]]:
    """Label names of the gateway's own metric objects (prometheus-client keeps them in
    `_labelnames`; `_name` is the family name, without `_total`)."""
    from prometheus_client.metrics import MetricWrapperBase

    import gateway.ingress.connections as connections
    import gateway.observability.metrics as metrics
    import gateway.pipeline.limits as limits

    declared: dict[str, set[str]] = {}
    for module in (metrics, limits, connections):
        for value in vars(module).values():
            if isinstance(value, MetricWrapperBase):
                declared[str(value._name)] = set(value._labelnames)
    return declared


async def _rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        assert resp.status == 200
        return dict(await resp.json())


def _m03(text: str) -> dict[str, Any]:
    return {"message": {"kind": "message", "messageId": f"m-{text}", "role": "user",
                        "parts": [{"kind": "text", "text": text}]}}


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, asyncio.Queue[Any]]]:
    """A client's webhook on 127.0.0.1, for a relayed push delivery."""
    async with receiving_webhooks() as hook:
        yield hook


async def _scrape(http: aiohttp.ClientSession, base: str) -> str:
    async with http.get(base + "/metrics") as resp:
        assert resp.status == 200
        return await resp.text()


@pytest.fixture
async def candidate_agent() -> AsyncIterator[str]:
    """A second demo agent on 127.0.0.1: a migrating tenant's candidate, which words a
    task's first artifact differently (its shadow copies disagree)."""
    port = free_port()
    runner = await start_demo_agent("127.0.0.1", port, answer_variant="artifact-text")
    yield f"http://127.0.0.1:{port}/"
    await runner.cleanup()


CANARY_SHARE = 0.5


def _migrating(primary: str, candidate: str, **migration: Any) -> dict[str, Any]:
    return {**v03(primary), "migration": {"candidate": v03(candidate)["backend"], **migration}}


def _request_ids(tenant: str) -> dict[str, str]:
    """arm -> a request id whose stable hash sends a new conversation (no context, no
    principal) of ``tenant`` to that arm at CANARY_SHARE: each arm gets one, by design."""
    chosen: dict[str, str] = {}
    i = 0
    while len(chosen) < 2:
        rid = f"dashboard-{i}"
        chosen.setdefault(arm_for(tenant, f"request:{rid}", CANARY_SHARE), rid)
        i += 1
    return chosen


async def _migrate(http: aiohttp.ClientSession, base: str) -> None:
    """Calls of the two migrating tenants. `shop` (canary, shadow copies of what the
    primary answers): a new conversation per arm; the primary's copied to the candidate,
    which words its artifact differently (disagree, a `text` difference); a GetTask of the
    primary's task (not copied). `gone` (every new
    conversation to a candidate that refuses connections): fallbacks to the primary, until
    the second makes the rollback's window breach and the canary is rolled back.

    The counters are the process's (other tests' gateways count in them too): what these
    calls counted is the rise from a scrape before them."""
    before = Exposition(await _scrape(http, base))
    tasks: dict[str, str] = {}
    for arm, rid in sorted(_request_ids("shop").items()):
        sent = await _rpc(http, base + "/shop/", "message/send", _m03(f"task: {arm}"),
                          {"X-Request-ID": rid})
        assert sent["result"]["status"]["state"] == "completed", sent
        tasks[arm] = sent["result"]["id"]
    got = await _rpc(http, base + "/shop/", "tasks/get", {"id": tasks["primary"]})
    assert got["result"]["id"] == tasks["primary"], got
    for i in range(2):
        sent = await _rpc(http, base + "/gone/", "message/send", _m03(f"gone {i}"))
        assert sent["result"]["parts"][0]["text"] == f"echo: gone {i}", sent  # the primary

    shop_candidate = {"tenant": "shop", "arm": "candidate", "verdict": "ok"}
    counted = {  # series -> labels -> the rise these calls make
        "a2a_gateway_migration_shadow_comparisons_total": [
            ({"tenant": "shop", "verdict": "disagree"}, 1)],  # the SendMessage copy
        "a2a_gateway_migration_shadow_differences_total": [
            ({"tenant": "shop", "kind": "text"}, 1)],
        # one conversation the candidate served and the shadow copy it answered
        "a2a_gateway_migration_calls_total": [
            (shop_candidate, 2), ({"tenant": "shop", "arm": "primary", "verdict": "ok"}, 2),
            ({"tenant": "gone", "arm": "primary", "verdict": "ok"}, 2)],
        "a2a_gateway_migration_fallbacks_total": [({"tenant": "gone"}, 2)],
        "a2a_gateway_migration_moves_total": [
            ({"tenant": "gone", "action": "rollback", "by": "automatic"}, 1)]}

    def rises(exposed: Exposition) -> dict[tuple[str, str], float]:
        return {(series, str(labels)): exposed.value(series, **labels)
                - before.value(series, **labels)
                for series, wanted in counted.items() for labels, _ in wanted}

    expected = {(series, str(labels)): rise
                for series, wanted in counted.items() for labels, rise in wanted}
    behind = [key for key in expected if "comparisons" in key[0] or "moves" in key[0]]

    async def settled() -> dict[tuple[str, str], float] | None:  # the copies and the
        seen = rises(Exposition(await _scrape(http, base)))  # rollback run behind the
        return seen if all(seen[key] for key in behind) else None  # answers

    seen = await wait_until(settled, "the shadow comparisons and the rollback counted",
                            interval=0.05)
    assert seen == expected


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
        "shop": _migrating(demo_agent, candidate_agent, mode="canary",
                           canary={"share": CANARY_SHARE},
                           shadow={"with_canary": True,
                                   "operations": ["SendMessage"]}),
        "gone": _migrating(demo_agent, refusing, mode="canary", canary={"share": 1.0},
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
            sent = await _rpc(http, base + "/", "message/send", _m03("hi"))
            assert sent["result"]["parts"][0]["text"] == "echo: hi"
            # v1.0 → v0.3: a text part cannot name a file in v0.3, so that is a loss.
            v10 = await _rpc(http, base + "/", "SendMessage", {"message": {
                "messageId": "m-v10", "role": "ROLE_USER",
                "parts": [{"text": "hi", "filename": "note.txt"}]}}, V10)
            assert v10["result"]["message"]["parts"][0]["text"] == "echo: hi"
            body = {"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": _m03("s")}
            async with http.post(base + "/", json=body) as resp:
                assert resp.headers["Content-Type"].startswith("text/event-stream")
                events = [line async for line in resp.content if line.startswith(b"data:")]
            assert events
            # The unknown task: an error from the backend, over JSON-RPC and REST.
            unknown = await _rpc(http, base + "/", "tasks/get", {"id": "nope"})
            assert unknown["error"]["code"] == -32001
            async with http.get(base + "/tasks/nope", headers=V10) as resp:
                assert resp.status == 404
            # A push notification relayed to the client's webhook (v1.0 client, v0.3 agent).
            url, received = webhook
            pushed = await _rpc(http, base + "/", "SendMessage", {
                "message": {"messageId": "m-push", "role": "ROLE_USER",
                            "parts": [{"text": "task: push"}]},
                "configuration": {"taskPushNotificationConfig": {"url": url}}}, V10)
            assert "task" in pushed["result"]
            await asyncio.wait_for(received.get(), 10)
            await _migrate(http, base)
            # Two reloads of the config file: one taken, one refused.
            watcher = server.watch_config()
            assert watcher is not None
            assert await watcher.reload("test")
            path.write_text("tenants: 5\n")
            assert not await watcher.reload("test")
            async def delivered() -> Exposition | None:  # once the webhook has answered
                exposed = Exposition(await _scrape(http, base))
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
        for braced, bare in _VARIABLE.findall(expr):
            name = braced or bare
            assert name in variables or name in GRAFANA_BUILTINS, f"{where}: ${name} undefined"
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), where


VALUES = _label_values()


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
        assert "$" not in _STRING.sub("", rule["expr"]), f"{name}: a Grafana variable in a rule"


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
        filled = _VARIABLE.sub(lambda m: values[m.group(1) or m.group(2)], expr)
        # Grafana's label_values(selector, label) is not PromQL: check its selector.
        filled = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", filled.strip())
        rules.append({"record": f"a2a_gateway_dashboard:query_{i}", "expr": filled})
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    _promtool_check(tool, path)
