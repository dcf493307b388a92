"""Tracing: W3C trace context across every dialect pair, OpenTelemetry spans when enabled.

Off (the default) nothing is built: no tracer provider, no span; a client's
`traceparent`/`tracestate` are copied to the backend call as they came (two header
copies), so a traced client and a traced backend still join across the gateway.

On (``tracing.exporter`` other than ``none``), every call gets:

- a SERVER span ``A2A <Operation>`` from the first byte to the log line, child of the
  client's trace context when it sent one;
- an INTERNAL span ``translate <Operation>`` for reading and decoding the request;
- a CLIENT span ``backend <Operation>`` for the backend call, whose context goes to the
  backend (HTTP headers, or gRPC metadata);
- a CLIENT span ``push relay delivery`` per relayed webhook delivery, child of the
  backend's trace context when its notification carried one (gateway/relay/trace_context.py).

Spans are parented explicitly through the call's context (``CallContext.trace``), never
through the current-context variable, so a stream's span may live across yields.
The hot path checks the module-level ``enabled`` flag once per hook.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gateway.call import CallContext, CallTrace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Span, Tracer

    from gateway.config.tracing import TracingConfig
    from translators.dialects.base import DecodedCall

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
# Longer values are not passed on (W3C: a version-00 traceparent is 55 characters, and
# tracestate may be cut at 512).
_MAX_PARENT = 128
_MAX_STATE = 512
_HEX = frozenset("0123456789abcdef")


# Read on every call: the one check the hot path makes.
enabled = False
_tracer: Tracer | None = None
_provider: TracerProvider | None = None
_memory: InMemorySpanExporter | None = None
_users = 0


# ------------------------------------------------------------------ setup


def configure(config: TracingConfig) -> bool:
    """Install the tracer for ``config``; False (and nothing done) when it is off. One
    process has one tracer: a second gateway in the same process shares the first one's
    (each :func:`configure` that returned True is paired with a :func:`shutdown`)."""
    global enabled, _tracer, _provider, _memory, _users
    if config.exporter == "none":
        return False
    _users += 1
    if _provider is not None:
        return True
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
    )
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        resource=Resource.create({"service.name": config.service_name}),
        sampler=ParentBased(TraceIdRatioBased(config.sample_ratio)))
    exporter: SpanExporter
    if config.exporter == "memory":
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        _memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(_memory))
    elif config.exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        exporter = _otlp(config)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    _provider = provider
    _tracer = provider.get_tracer("a2a-gateway")
    enabled = True
    return True


def _otlp(config: TracingConfig) -> Any:
    headers = config.headers or None
    if config.exporter == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        endpoint = config.endpoint or "localhost:4317"
        return GrpcExporter(endpoint=endpoint, headers=headers,
                            insecure=not endpoint.startswith("https://"))
    from urllib.parse import urlsplit

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    url = config.endpoint or "http://localhost:4318/v1/traces"
    if urlsplit(url).path in ("", "/"):
        url = url.rstrip("/") + "/v1/traces"
    return HttpExporter(endpoint=url, headers=headers)


def shutdown() -> None:
    """Undo one :func:`configure` that returned True; the last one flushes the exporter
    and turns tracing off (it blocks: call it off the event loop when the OTLP receiver
    may be served by it)."""
    global enabled, _tracer, _provider, _memory, _users
    _users = max(0, _users - 1)
    if _users or _provider is None:
        return
    provider = _provider
    enabled, _tracer, _provider, _memory = False, None, None, None
    provider.shutdown()


def flush(timeout_millis: int = 10_000) -> bool:
    """Export the finished spans now (blocks)."""
    return _provider.force_flush(timeout_millis) if _provider is not None else True


def memory_exporter() -> InMemorySpanExporter | None:
    """The spans of ``exporter: memory`` (tests)."""
    return _memory


# ------------------------------------------------------------------ inbound


def carrier_of(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The W3C trace context the headers carry (traceparent, and tracestate when it
    fits), to be passed on; None without a traceparent that fits."""
    parent = headers.get(TRACEPARENT)
    if parent is None or len(parent) > _MAX_PARENT:
        return None
    carrier = {TRACEPARENT: parent}
    state = headers.get(TRACESTATE)
    if state is not None and len(state) <= _MAX_STATE:
        carrier[TRACESTATE] = state
    return carrier


def take(ctx: CallContext, headers: Mapping[str, str]) -> None:
    """The client's trace context from its HTTP headers (or gRPC metadata, first values,
    lowercase keys)."""
    carrier = carrier_of(headers)
    if carrier is not None:
        ctx.trace = CallTrace(carrier)
    elif enabled:
        ctx.trace = CallTrace({})


def take_metadata(ctx: CallContext, md: Mapping[str, list[str]]) -> None:
    """:func:`take` for gRPC metadata read as lists of values."""
    parent = md.get(TRACEPARENT)
    if parent is not None or enabled:
        state = md.get(TRACESTATE)
        take(ctx, {k: v[0] for k, v in ((TRACEPARENT, parent), (TRACESTATE, state)) if v})


def _wall_ns(monotonic: float) -> int:
    return time.time_ns() - int((time.monotonic() - monotonic) * 1e9)


def _start_server(ctx: CallContext, operation: str) -> Span | None:
    trace: CallTrace | None = ctx.trace
    if trace is None or _tracer is None:
        return None
    if trace.server is None:
        from opentelemetry.trace import SpanKind
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        parent = TraceContextTextMapPropagator().extract(trace.carrier)
        trace.server = _tracer.start_span(f"A2A {operation}", context=parent,
                                          kind=SpanKind.SERVER,
                                          start_time=_wall_ns(ctx.facts.started))
    return trace.server


def decoded(ctx: CallContext, call: DecodedCall[object]) -> None:
    """The request is decoded: open the call's SERVER span (from its first byte) and
    mark the reading and decoding as a child span."""
    if not enabled:
        return
    server = _start_server(ctx, call.op.name)
    if server is None or _tracer is None:
        return
    from opentelemetry.trace import SpanKind, set_span_in_context

    span = _tracer.start_span(f"translate {call.op.name}", set_span_in_context(server),
                              kind=SpanKind.INTERNAL, start_time=_wall_ns(ctx.facts.started))
    span.set_attribute("a2a.client.version", call.dialect.version)
    span.set_attribute("a2a.client.binding", ctx.facts.binding)
    if call.loss.dropped:
        span.set_attribute("a2a.dropped", list(call.loss.dropped))
    span.end()


def finish(ctx: CallContext, operation: str, outcome: str,
           error: BaseException | None) -> None:
    """The call is over (its log line is written): close its SERVER span."""
    if not enabled:
        return
    span = _start_server(ctx, operation)
    if span is None:
        return
    _call_attributes(span, ctx, operation)
    if ctx.outcome.events:
        span.set_attribute("a2a.stream.events", ctx.outcome.events)
    if error is not None:
        span.set_attribute("a2a.error", outcome)
        if outcome != "CLIENT_CANCELLED":
            mark_failed(span, outcome, error)
    span.end()


def _call_attributes(span: Span, ctx: CallContext, operation: str) -> None:
    span.set_attribute("a2a.operation", operation)
    span.set_attribute("a2a.request_id", ctx.facts.request_id)
    if ctx.tenant:
        span.set_attribute("a2a.tenant", ctx.tenant)
    if ctx.client_version:
        span.set_attribute("a2a.client.version", ctx.client_version)
    span.set_attribute("a2a.client.binding", ctx.facts.binding)
    out = ctx.outcome
    if out.backend_version:
        span.set_attribute("a2a.backend.version", out.backend_version)
    if out.backend_binding:
        span.set_attribute("a2a.backend.binding", out.backend_binding)
    span.set_attribute("a2a.forwarded", out.forwarded)
    if ctx.loss.dropped:
        span.set_attribute("a2a.dropped", list(ctx.loss.dropped))


def mark_failed(span: Span, reason: str, error: BaseException | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    message = getattr(error, "message", None) or (str(error) if error else "") or reason
    span.set_status(Status(StatusCode.ERROR, f"{reason}: {message}"[:256]))


def trace_id(ctx: CallContext) -> str | None:
    """The call's trace id for the log line: its span's, else the client's traceparent's."""
    trace: CallTrace | None = ctx.trace
    if trace is None:
        return None
    if trace.server is not None:
        sc = trace.server.get_span_context()
        if sc.trace_id:
            return format(sc.trace_id, "032x")
    parts = trace.carrier.get(TRACEPARENT, "").split("-")
    if len(parts) >= 4 and len(parts[1]) == 32 and set(parts[1]) <= _HEX:
        return parts[1]
    return None


# ------------------------------------------------------------------ outbound


class _NoSpan:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


class _BackendSpan:
    """The CLIENT span of one backend call (a unary call, or a stream as long as it lasts)."""

    __slots__ = ("ctx", "operation")

    def __init__(self, ctx: CallContext, operation: str) -> None:
        self.ctx = ctx
        self.operation = operation

    async def __aenter__(self) -> None:
        trace: CallTrace | None = self.ctx.trace
        server = _start_server(self.ctx, self.operation)
        if trace is None or server is None or _tracer is None:
            return
        from opentelemetry.trace import SpanKind, set_span_in_context

        span = _tracer.start_span(f"backend {self.operation}", set_span_in_context(server),
                                  kind=SpanKind.CLIENT)
        out = self.ctx.outcome
        span.set_attribute("a2a.operation", self.operation)
        span.set_attribute("a2a.backend.version", out.backend_version or "")
        span.set_attribute("a2a.backend.binding", out.backend_binding or "")
        if self.ctx.tenant:
            span.set_attribute("a2a.tenant", self.ctx.tenant)
        trace.client = span

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        _tb: object) -> None:
        trace: CallTrace | None = self.ctx.trace
        span = trace.client if trace is not None else None
        if span is None or trace is None:
            return
        trace.client = None
        span.set_attribute("a2a.forwarded", self.ctx.outcome.forwarded)
        if self.ctx.outcome.events:
            span.set_attribute("a2a.stream.events", self.ctx.outcome.events)
        reason = self.ctx.outcome.backend_error
        if error is not None and not isinstance(error, GeneratorExit):
            reason = reason or getattr(getattr(error, "kind", None), "reason", None) or (
                type(error).__name__)
        if reason is not None and error is not None:
            span.set_attribute("a2a.error", reason)
            if reason not in ("CancelledError", "GeneratorExit"):
                mark_failed(span, reason, error)
        span.end()


def backend_span(ctx: CallContext, operation: str) -> _BackendSpan | _NoSpan:
    """``async with`` around one backend call: its CLIENT span, when tracing is on."""
    if not enabled or ctx.trace is None:
        return _NO_SPAN
    return _BackendSpan(ctx, operation)


def outgoing(ctx: CallContext) -> dict[str, str]:
    """The trace headers for a backend call: the backend call's span when tracing is on,
    else the client's own, unchanged."""
    trace: CallTrace | None = ctx.trace
    if trace is None:
        return {}
    span = trace.client or trace.server
    if span is None:
        return trace.carrier
    return inject(span)


def inject(span: Span) -> dict[str, str]:
    from opentelemetry.trace import set_span_in_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, set_span_in_context(span))
    return carrier


def active_tracer() -> Tracer | None:
    """The tracer while tracing is on, else None."""
    return _tracer if enabled else None
