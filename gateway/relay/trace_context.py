"""The push relay's trace context: a backend's webhook notification parents the deliveries
it causes, and each delivery carries its span's context (or the notification's, unchanged,
when tracing is off). gateway/observability/tracing.py traces the calls."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Mapping
from typing import Any

from gateway.observability import tracing

# The trace context a backend's webhook notification came with, set in each delivery's
# own task (the relay worker's: gateway/relay/worker.py).
_relay_parent: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "a2a_relay_parent", default=None)
_delivery_span: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "a2a_delivery_span", default=None)


def inbound(headers: Mapping[str, str]) -> dict[str, str]:
    """A backend's webhook notification's trace context (empty: none), stored with its
    deliveries in the relay queue: it becomes their parent (:func:`adopt`)."""
    return tracing.carrier_of(headers) or {}


def adopt(carrier: dict[str, str]) -> None:
    """In a delivery's own asyncio task: its notification's trace context is the parent."""
    _relay_parent.set(carrier or None)


async def delivery(target: Any, work: Awaitable[tuple[int, str]]) -> tuple[int, str]:
    """Await one relayed delivery (``(attempts, error)``) inside its span, when on."""
    tracer = tracing.active_tracer()
    if tracer is None:
        return await work
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    parent = TraceContextTextMapPropagator().extract(_relay_parent.get() or {})
    span = tracer.start_span("push relay delivery", parent, kind=SpanKind.CLIENT)
    span.set_attribute("a2a.tenant", target.tenant)
    span.set_attribute("a2a.client.version", target.client_version)
    span.set_attribute("a2a.backend.version", target.backend_version)
    token = _delivery_span.set(span)
    try:
        attempts, error = await work
    except BaseException as exc:
        span.set_attribute("a2a.error", type(exc).__name__)
        span.end()
        raise
    finally:
        _delivery_span.reset(token)
    span.set_attribute("a2a.relay.attempts", attempts)
    if error:
        span.set_attribute("a2a.error", error[:256])
        tracing.mark_failed(span, "delivery failed", RuntimeError(error[:200]))
    span.end()
    return attempts, error


def delivery_headers() -> dict[str, str]:
    """The trace headers of a relayed delivery: its span's when tracing is on, else those
    the backend's notification carried, unchanged."""
    span = _delivery_span.get()
    if span is not None:
        return tracing.inject(span)
    return _relay_parent.get() or {}
