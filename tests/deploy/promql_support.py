"""Just enough PromQL to check the dashboard's and the alert rules' queries against what a
gateway exposes (tests/deploy/test_dashboards.py): the metric names, the labels matched
and grouped by, the literal values matched; and the label values the gateway gives."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import get_args

from prometheus_client.parser import text_string_to_metric_families

from gateway.migration.api import Move
from gateway.migration.stats import Verdict
from gateway.migration.sticky import Arm
from gateway.relay.delivery import RelayCounters
from translators.answer_diff import KINDS as DIFFERENCE_KINDS
from translators.errors import ERROR_KINDS
from translators.operations import OPERATIONS

# --- PromQL, just enough of it ----------------------------------------------------------------

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GATEWAY_NAME = re.compile(r"(?<![A-Za-z0-9_:])a2a_gateway_[A-Za-z0-9_:]*")
_SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])(a2a_gateway_[A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER_VALUE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)")


def _unquoted(expr: str) -> str:
    """The expression with every string literal emptied: a label value never reads as a name."""
    return STRING.sub('""', expr)


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


def label_values() -> dict[tuple[str, str], set[str]]:
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
