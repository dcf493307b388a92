"""The per-call counts and observations wait in a batch (gateway/observability/metrics.py) and reach
prometheus-client's metrics as if each had been added at once."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.observability import metrics
from gateway.observability.metrics import _LATENCY_BUCKETS, _Batch, _Children
from tests.support.waiting import timers_due_after

SECONDS = [0.0, 0.0004, 0.001, 0.0011, 0.0025, 0.07, 1, 29.9, 30, 31, 1e9, float("inf")]


def _pair() -> tuple[CollectorRegistry, Histogram, Counter, CollectorRegistry, Histogram,
                     Counter]:
    made = []
    for _ in range(2):
        registry = CollectorRegistry()
        made += [registry, Histogram("h_seconds", "h", ["op"], buckets=_LATENCY_BUCKETS,
                                     registry=registry),
                 Counter("c_total", "c", ["op", "outcome"], registry=registry)]
    return tuple(made)  # type: ignore[return-value]


def test_a_flushed_batch_equals_the_same_values_added_one_by_one() -> None:
    direct, h1, c1, batched, h2, c2 = _pair()
    batch, hist, count = _Batch(), _Children(h2), _Children(c2)
    for op in ("a", "b"):
        for seconds in SECONDS:
            h1.labels(op).observe(seconds)
            batch.observe(hist, (op,), seconds)
        c1.labels(op, "ok").inc()
        c1.labels(op, "ok").inc(2.5)
        batch.count(count, (op, "ok"))
        batch.count(count, (op, "ok"), 2.5)
    batch.flush()

    def samples(registry: CollectorRegistry) -> list[str]:  # when each was made aside
        return [line for line in generate_latest(registry).decode().splitlines()
                if "_created" not in line]

    assert samples(batched) == samples(direct)


async def test_a_batch_is_added_when_its_time_is_up_with_every_count_since() -> None:
    _, _, _, registry, _, counter = _pair()
    batch, count = _Batch(every=0.01), _Children(counter)
    batch.count(count, ("a", "ok"))
    await asyncio.sleep(0)  # not at the end of the loop's pass: later, with the others
    batch.count(count, ("a", "ok"))
    assert registry.get_sample_value("c_total", {"op": "a", "outcome": "ok"}) is None
    await timers_due_after(0.02)
    assert registry.get_sample_value("c_total", {"op": "a", "outcome": "ok"}) == 2


def test_the_default_wait_is_the_documented_one() -> None:
    assert _Batch().every == metrics.FLUSH_EVERY == 0.05  # docs/observability.md


def test_a_batch_serves_a_new_event_loop() -> None:
    """A flush left scheduled on a loop that closed does not hold the next loop's counts."""
    _, _, _, registry, _, counter = _pair()
    batch, count = _Batch(every=0.01), _Children(counter)

    async def one() -> None:
        batch.count(count, ("a", "ok"))

    asyncio.run(one())  # its flush never ran: the loop closed first

    async def later() -> None:
        batch.count(count, ("a", "ok"))
        await timers_due_after(0.02)  # this loop's flush runs

    asyncio.run(later())
    assert registry.get_sample_value("c_total", {"op": "a", "outcome": "ok"}) == 2


def test_the_metrics_page_adds_what_is_waiting() -> None:
    metrics.card_hit("batch-test")
    text = metrics.exposition()[0].decode()
    assert 'a2a_gateway_card_cache_hits_total{tenant="batch-test"} 1.0' in text
