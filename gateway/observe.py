"""Logging: one structured JSON line per call, never payloads or credentials."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any

import structlog

from gateway import tracing
from gateway.call import CallContext
from gateway.log_lines import render_line
from gateway.log_writer import LineWriter, LineWriterFactory
from gateway.metrics import LOSSES, record_call
from translators.errors import A2AError

_configured = False
# Where a call's info line goes straight (None: through structlog, as before
# configure_logging or below level info), and the worker it names.
_call_lines: LineWriter | None = None
_worker: int | None = None


def configure_logging(level: str = "info", worker: int | None = None) -> None:
    """JSON lines on stderr; a worker's lines carry its index (`worker`)."""
    global _configured, _call_lines, _worker
    logging.basicConfig(stream=sys.stderr, format="%(message)s",
                        level=getattr(logging, level.upper()))
    if _configured:
        return
    factory = LineWriterFactory(sys.stderr)
    if getattr(logging, level.upper()) <= logging.INFO:
        _call_lines, _worker = factory.writer, worker

    def tag(_: Any, __: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        event["worker"] = worker
        return event

    structlog.configure(
        # No structlog.contextvars: nothing binds any, and merging them walks the whole
        # context of every line.
        processors=[
            *([] if worker is None else [tag]),
            render_line,  # level, timestamp, traceback, JSON (gateway/log_lines.py)
        ],
        # Straight to stderr: the stdlib logging layer cost ~10% of a call's CPU (bench/);
        # one write per turn of the event loop (gateway/log_writer.py).
        logger_factory=factory,
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        cache_logger_on_first_use=True,
    )
    _configured = True


log = structlog.get_logger("a2a_gateway.call")


def outcome_of(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    if isinstance(error, asyncio.CancelledError):
        return "CLIENT_CANCELLED"  # the client went away or gave up; not a failure of ours
    if isinstance(error, A2AError):
        return error.kind.reason
    return "INTERNAL_ERROR"


def log_call(ctx: CallContext, operation: str, error: BaseException | None) -> None:
    seconds = time.monotonic() - ctx.started
    outcome = outcome_of(error)
    record_call(ctx, operation, outcome, seconds)
    fields: dict[str, Any] = {
        "request_id": ctx.request_id,
        "tenant": ctx.tenant,
        "operation": operation,
        "client_version": ctx.client_version,
        "client_binding": ctx.client_binding,
        "backend_version": ctx.outcome.backend_version,
        "backend_binding": ctx.outcome.backend_binding,
        "outcome": outcome,
        "duration_ms": round(seconds * 1000, 2),
    }
    trace_id = tracing.trace_id(ctx)
    if trace_id is not None:
        fields["trace_id"] = trace_id
    if ctx.principal is not None:  # who called (auth); never the credential itself
        fields["principal"] = ctx.principal.name
        fields["auth"] = ctx.principal.method
    if ctx.outcome.events:
        fields["stream_events"] = ctx.outcome.events
    if ctx.outcome.forwarded:
        fields["forwarded"] = True  # same dialect on both sides: passed through as sent
    if ctx.loss.dropped:
        fields["dropped"] = list(ctx.loss.dropped)
    if isinstance(error, A2AError):
        fields["error_message"] = error.message
    if error is not None and not isinstance(error, A2AError | asyncio.CancelledError):
        log.error("call", **fields, exc_info=error)
    elif _call_lines is not None:
        _call_line(_call_lines, fields)
    else:
        log.info("call", **fields)
    tracing.finish(ctx, operation, outcome, error)


def _call_line(writer: LineWriter, fields: dict[str, Any]) -> None:
    """The line structlog would write for ``log.info("call", **fields)``, the same
    fields in the same order, without its layers: one line per call made them ~5 % of
    a forwarded call's CPU (bench/README.md)."""
    fields["event"] = "call"
    if _worker is not None:
        fields["worker"] = _worker
    writer.msg(render_line(writer, "info", fields))


_dropped_logged: set[tuple[str, str, tuple[str, ...]]] = set()


def log_dropped(what: str, tenant: str, fields: list[str]) -> None:
    """Fields a served document (a card) could not carry: counted every time, logged the
    first time each set is seen (a card is fetched often and says the same each time)."""
    for path in fields:
        LOSSES.labels(path, what).inc()
    key = (what, tenant, tuple(fields))
    if key not in _dropped_logged and len(_dropped_logged) < 1024:
        _dropped_logged.add(key)
        log.info("dropped", what=what, tenant=tenant, dropped=fields)
