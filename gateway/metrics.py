"""Prometheus metrics (prometheus-client), exported at `/metrics`.

With workers (README "Workers") the supervisor sets PROMETHEUS_MULTIPROC_DIR before any
worker starts: each worker writes its values there, every gauge says how workers' values
combine (`multiprocess_mode`), and `/metrics` on any worker reads all of them.

Every call is counted once, at the same place it is logged (observe.log_call), so the
log line and the counters cannot disagree. Label values are bounded: operations,
dialects and outcomes come from fixed tables; loss field paths lose their indices.
"""

from __future__ import annotations

import os
import re
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from gateway.call import CallContext

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

CALLS = Counter("a2a_gateway_calls_total", "Calls handled, by tenant, dialects and outcome "
                "(tenant `none`: refused before a configured tenant was reached)",
                ["tenant", "operation", "client_version", "client_binding", "backend_version",
                 "backend_binding", "outcome"])
CALL_SECONDS = Histogram("a2a_gateway_call_duration_seconds", "Whole call, as the client sees it",
                         ["operation", "client_binding", "backend_binding"],
                         buckets=_LATENCY_BUCKETS)
GATEWAY_SECONDS = Histogram("a2a_gateway_added_seconds",
                            "Time spent in the gateway itself (call minus backend time)",
                            ["operation"], buckets=_LATENCY_BUCKETS)
BACKEND_SECONDS = Histogram("a2a_gateway_backend_duration_seconds",
                            "Backend time: the answer, or a stream's first event",
                            ["backend_binding", "operation"], buckets=_LATENCY_BUCKETS)
OPEN_STREAMS = Gauge("a2a_gateway_open_streams", "Streams open now", ["client_binding"],
                     multiprocess_mode="livesum")
STREAM_EVENTS = Counter("a2a_gateway_stream_events_total", "Stream events relayed to clients",
                        ["operation", "client_binding"])
LOSSES = Counter("a2a_gateway_translation_losses_total",
                 "Fields one side could not carry", ["field", "direction"])
BACKEND_ERRORS = Counter("a2a_gateway_backend_errors_total", "Errors that came from backends",
                         ["tenant", "kind"])
CARD_HITS = Counter("a2a_gateway_card_cache_hits_total", "Backend cards served from cache",
                    ["tenant"])
CARD_REFRESHES = Counter("a2a_gateway_card_refreshes_total", "Backend card fetches",
                         ["tenant", "outcome"])
PUSH_DELIVERIES = Counter("a2a_gateway_push_deliveries_total", "Relayed webhook deliveries",
                          ["outcome"])
TASK_RECORDS = Counter("a2a_gateway_task_index_records_total",
                       "Task records written to the state store (after coalescing)")
TASK_DROPS = Counter("a2a_gateway_task_index_dropped_total", "Task observations not "
                     "recorded: queue full (the call was never held up), or store error",
                     ["reason"])
FALLBACKS = Counter("a2a_gateway_interface_fallbacks_total", "Calls served by another "
                    "interface of the backend's agent than the configured one",
                    ["tenant", "operation", "binding"])
RELOADS = Counter("a2a_gateway_config_reloads_total", "Config reloads", ["outcome"])

_INDEX = re.compile(r"\[\d+(?::\d*)?\]")


class _Children:
    """A labelled metric's children by their label values. `labels()` validates and locks
    on every lookup, which cost more than the increments themselves; every value here
    comes from a bounded set (configured tenants, fixed tables), so the cache stays
    small, and the cap only guards against a bug (past it, lookups go through
    `labels()` as before)."""

    CAP = 4096

    def __init__(self, metric: Any) -> None:
        self._labels = metric.labels
        self._by_values: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._by_values.get(values)
        if child is None:
            child = self._labels(*values)
            if len(self._by_values) < self.CAP:
                self._by_values[values] = child
        return child


_calls, _call_seconds = _Children(CALLS), _Children(CALL_SECONDS)
_backend_seconds, _gateway_seconds = _Children(BACKEND_SECONDS), _Children(GATEWAY_SECONDS)
_stream_events = _Children(STREAM_EVENTS)


def record_call(ctx: CallContext, operation: str, outcome: str, seconds: float) -> None:
    out = ctx.outcome
    backend_binding = out.backend_binding or "none"
    # Only a configured tenant names a series: what a client wrote is not a label value.
    _calls(out.tenant or "none", operation, ctx.client_version, ctx.client_binding,
           out.backend_version or "none", backend_binding, outcome).inc()
    _call_seconds(operation, ctx.client_binding, backend_binding).observe(seconds)
    if out.backend_seconds is not None:
        _backend_seconds(backend_binding, operation).observe(out.backend_seconds)
        _gateway_seconds(operation).observe(max(0.0, seconds - out.backend_seconds))
    if out.events:
        _stream_events(operation, ctx.client_binding).inc(out.events)
    loss = ctx.loss
    if loss.dropped:
        for path in loss.request:
            LOSSES.labels(_INDEX.sub("[]", path), "request").inc()
        for path in [*loss.response, *loss.held]:
            LOSSES.labels(_INDEX.sub("[]", path), "response").inc()
    if out.backend_error is not None:
        BACKEND_ERRORS.labels(ctx.tenant or "none", out.backend_error).inc()


def _all_workers() -> CollectorRegistry | None:
    """What `/metrics` exports: every worker's values, or None for this process's own."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return None
    registry = CollectorRegistry()
    MultiProcessCollector(registry, directory)  # type: ignore[no-untyped-call]
    return registry


_EXPORTED = _all_workers()


def exposition() -> tuple[bytes, str]:
    if _EXPORTED is None:
        return generate_latest(), CONTENT_TYPE_LATEST
    return generate_latest(_EXPORTED), CONTENT_TYPE_LATEST
