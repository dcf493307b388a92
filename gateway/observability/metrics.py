"""Prometheus metrics (prometheus-client), exported at `/metrics`.

With workers (README "Workers") the supervisor sets PROMETHEUS_MULTIPROC_DIR before any
worker starts: each worker writes its values there, every gauge says how workers' values
combine (`multiprocess_mode`), and `/metrics` on any worker reads all of them.

Every call is counted once, at the same place it is logged (observe.finish), so the
log line and the counters cannot disagree. Label values are bounded: operations,
dialects and outcomes come from fixed tables; loss field paths lose their indices.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import re
from bisect import bisect_left
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
from gateway.observability.logs.writer import FLUSH_EVERY

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_BOUNDS = (*_LATENCY_BUCKETS, float("inf"))  # the histograms' buckets, +Inf last

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
# Counted by the gateway's limits (gateway/pipeline/limits.py) and the tenants' rate limits
# (gateway/auth/ratelimit.py) alike.
LIMIT_REFUSALS = Counter("a2a_gateway_limit_refusals_total", "Calls refused because a limit "
                         "was reached", ["limit", "scope"])
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
# No destination label: receivers' URLs are the clients' choice, unbounded (the log names
# the destination of each change).
PUSH_CIRCUITS_OPEN = Gauge("a2a_gateway_push_circuits_open", "Webhook destinations whose "
                           "circuit breaker is open or half-open now (each process keeps "
                           "its own)", multiprocess_mode="livesum")
PUSH_CIRCUIT_OPENINGS = Counter("a2a_gateway_push_circuit_openings_total", "Times a webhook "
                                "destination's circuit breaker opened (or opened again "
                                "after a failed probe)")
# Migration mode (gateway/migration): per tenant and arm (primary | candidate).
MIGRATION_CALLS = Counter("a2a_gateway_migration_calls_total", "Calls of tenants in migration "
                          "mode, by the agent that served them and verdict (ok | error | "
                          "timeout; shadow copies count for the candidate)",
                          ["tenant", "arm", "verdict"])
MIGRATION_COMPARISONS = Counter("a2a_gateway_migration_shadow_comparisons_total", "Shadow "
                                "copies, by verdict (agree | disagree | skipped | failed)",
                                ["tenant", "verdict"])
MIGRATION_DIFFS = Counter("a2a_gateway_migration_shadow_differences_total", "Shadow "
                          "comparisons that found a kind of difference (above the A/A noise)",
                          ["tenant", "kind"])
MIGRATION_SHARE = Gauge("a2a_gateway_migration_canary_share", "Share of new conversations "
                        "the candidate gets now", ["tenant"], multiprocess_mode="mostrecent")
MIGRATION_MOVES = Counter("a2a_gateway_migration_moves_total", "Canary shares moved: "
                          "rollbacks and promotions, by `automatic` (a threshold) or by "
                          "who moved it by hand (the admin API and its caller)",
                          ["tenant", "action", "by"])
MIGRATION_FALLBACKS = Counter("a2a_gateway_migration_fallbacks_total", "New conversations "
                              "the candidate refused to connect for, sent to the primary",
                              ["tenant"])
TASK_RECORDS = Counter("a2a_gateway_task_index_records_total",
                       "Task records written to the state store (after coalescing)")
TASK_DROPS = Counter("a2a_gateway_task_index_dropped_total", "Task observations not "
                     "recorded: queue full (the call was never held up), or store error",
                     ["reason"])
FALLBACKS = Counter("a2a_gateway_interface_fallbacks_total", "Calls served by another "
                    "interface of the backend's agent than the configured one",
                    ["tenant", "operation", "binding"])
RELOADS = Counter("a2a_gateway_config_reloads_total", "Config reloads", ["outcome"])
RESUMES = Counter("a2a_gateway_stream_resumes_total", "Streams resumed with Last-Event-ID: "
                  "from the journal (replayed) or from a snapshot (gap)", ["outcome"])
RESUMED_EVENTS = Counter("a2a_gateway_stream_replayed_events_total",
                         "Journaled events served again to resuming clients")
HELD_STREAMS = Counter("a2a_gateway_stream_holds_total", "Backend streams read on after "
                       "their client went away, so that the journal keeps their events")
REATTACHES = Counter("a2a_gateway_stream_reattaches_total", "Backend streams that broke "
                     "mid-task, by what the gateway's re-subscribe came to: reattached, "
                     "refused (the task as it is instead), gave_up (the client's stream "
                     "ended cleanly, resumable)", ["outcome"])
GAPS = Counter("a2a_gateway_stream_gaps_total", "Resumed streams that got the task's "
               "snapshot marked as a gap instead of events they missed: the journal no "
               "longer held them (journal), or no gateway read them (unseen)", ["reason"])
# Sampled by the state store's pruning pass (state.retention.interval; SQLite only): every
# worker reads the same file, so the latest sample is the value.
JOURNAL_EVENTS = Gauge("a2a_gateway_stream_journal_events", "Entries held by the stream "
                       "journal, all tasks (sampled at each pruning)",
                       multiprocess_mode="mostrecent")
JOURNAL_BYTES = Gauge("a2a_gateway_stream_journal_bytes", "Bytes of entries held by the "
                      "stream journal, all tasks (sampled at each pruning)",
                      multiprocess_mode="mostrecent")
JOURNAL_FAILURES = Counter("a2a_gateway_stream_journal_failures_total", "Streams that went "
                           "on without ids because the state store failed a journal write")

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


class _Batch:
    """The counts and observations of the calls of up to FLUSH_EVERY seconds (as long as
    their log lines wait: gateway/observability/logs/writer.py), added to
    the metrics together: prometheus-client locks and checks on every increment (a
    histogram observation is two increments), which per call cost more than the rest of
    the bookkeeping; added once for all the calls of a flush, at 5k calls/s that is
    about one increment each per 250 calls. Histogram observations are kept as bucket
    counts and a sum, and added to the child's buckets and sum (the values its own
    `observe` increments). A /metrics page adds this process's own first; another
    worker's show in its file at most FLUSH_EVERY late, and a worker killed outright
    (SIGKILL) loses at most that much of its counts (a stopping one flushes them)."""

    def __init__(self, every: float = FLUSH_EVERY) -> None:
        self.every = every  # seconds the first count waits for the flush
        self._counts: dict[tuple[_Children, tuple[str, ...]], float] = {}
        # Per histogram child: the hits of the buckets observed (by index; a batch touches
        # a few of the 15) and, under the key -1, the sum of the seconds.
        self._spreads: dict[tuple[_Children, tuple[str, ...]], dict[int, float]] = {}
        # Gauge children moved up or down (slots held): a slot taken and given back in
        # one batch adds nothing to write.
        self._moves: dict[Gauge, float] = {}
        self._timer: asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # The flush reads no context variable: one empty context for every flush, instead
        # of a copy of the caller's made by call_later each time.
        self._context = contextvars.Context()

    def count(self, metric: _Children, values: tuple[str, ...], amount: float = 1) -> None:
        key = (metric, values)
        self._counts[key] = self._counts.get(key, 0) + amount
        if self._timer is None or self._loop is None or self._loop.is_closed():
            self._arm()

    def observe(self, metric: _Children, values: tuple[str, ...], seconds: float) -> None:
        key = (metric, values)
        spread = self._spreads.get(key)
        if spread is None:
            spread = self._spreads[key] = {-1: 0.0}
        bucket = bisect_left(_BOUNDS, seconds)  # the first bucket with seconds <= le
        spread[bucket] = spread.get(bucket, 0) + 1
        spread[-1] += seconds
        if self._timer is None or self._loop is None or self._loop.is_closed():
            self._arm()

    def move(self, gauge: Gauge, amount: float) -> None:
        """``gauge`` (a labelled Gauge child) up by ``amount`` (down when negative)."""
        self._moves[gauge] = self._moves.get(gauge, 0) + amount
        if self._timer is None or self._loop is None or self._loop.is_closed():
            self._arm()

    def _arm(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to wait on: now
            self.flush()
            return
        self._loop = loop
        self._timer = loop.call_later(self.every, self.flush, context=self._context)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        counts, self._counts = self._counts, {}
        spreads, self._spreads = self._spreads, {}
        moves, self._moves = self._moves, {}
        for gauge, amount in moves.items():
            if amount:
                gauge.inc(amount)
        for (metric, values), amount in counts.items():
            metric(*values).inc(amount)
        for (metric, values), spread in spreads.items():
            child = metric(*values)
            buckets = child._buckets
            for i, hits in spread.items():
                if i >= 0:
                    buckets[i].inc(hits)
            child._sum.inc(spread[-1])


_batch = _Batch()
flush = _batch.flush
move_gauge = _batch.move
atexit.register(flush)

_calls, _call_seconds = _Children(CALLS), _Children(CALL_SECONDS)
_backend_seconds, _gateway_seconds = _Children(BACKEND_SECONDS), _Children(GATEWAY_SECONDS)
_stream_events, _card_hits = _Children(STREAM_EVENTS), _Children(CARD_HITS)


def record_call(ctx: CallContext, operation: str, outcome: str, seconds: float) -> None:
    out = ctx.outcome
    backend_binding = out.backend_binding or "none"
    batch = _batch
    # Only a configured tenant names a series: what a client wrote is not a label value.
    batch.count(_calls, (out.tenant or "none", operation, ctx.client_version,
                         ctx.facts.binding, out.backend_version or "none", backend_binding,
                         outcome))
    batch.observe(_call_seconds, (operation, ctx.facts.binding, backend_binding), seconds)
    if out.backend_seconds is not None:
        batch.observe(_backend_seconds, (backend_binding, operation), out.backend_seconds)
        batch.observe(_gateway_seconds, (operation,), max(0.0, seconds - out.backend_seconds))
    if out.events:
        batch.count(_stream_events, (operation, ctx.facts.binding), out.events)
    loss = ctx.loss
    if loss.dropped:
        for path in loss.request:
            LOSSES.labels(_INDEX.sub("[]", path), "request").inc()
        for path in [*loss.response, *loss.held]:
            LOSSES.labels(_INDEX.sub("[]", path), "response").inc()
    if out.backend_error is not None:
        BACKEND_ERRORS.labels(ctx.tenant or "none", out.backend_error).inc()


def card_hit(tenant: str) -> None:
    _batch.count(_card_hits, (tenant,))


_migration_calls = _Children(MIGRATION_CALLS)


def migration_call(tenant: str, arm: str, verdict: str) -> None:
    """A call of a tenant in migration mode (MIGRATION_CALLS), counted in the batch with
    the other calls of its time: one per call, on its path."""
    _batch.count(_migration_calls, (tenant, arm, verdict))


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
    flush()
    if _EXPORTED is None:
        return generate_latest(), CONTENT_TYPE_LATEST
    return generate_latest(_EXPORTED), CONTENT_TYPE_LATEST
