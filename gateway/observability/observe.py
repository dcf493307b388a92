"""Logging: one structured JSON line per request, never payloads or credentials.

Where lines go and in what format: gateway/observability/logs/setup.py; the access line
(one per request, the call's fields in it): gateway/observability/logs/access.py. Here:
what a call's end records (metrics, trace, the fields its access line will carry) and the
dropped-fields line.
"""

from __future__ import annotations

import time

import structlog

from gateway.call import CallContext
from gateway.config.logs import LogConfig
from gateway.observability import tracing
from gateway.observability.logs import access
from gateway.observability.logs import setup as log_setup
from gateway.observability.logs.access import outcome_of
from gateway.observability.metrics import LOSSES, record_call

__all__ = ["configure_logging", "finish", "log_dropped", "outcome_of"]

_configured = False


def configure_logging(config: LogConfig | str = "info", worker: int | None = None) -> None:
    """Every line of the process on stderr as ``config`` says (a level alone: JSON); a
    worker's lines carry its index (`worker`)."""
    global _configured
    if _configured:
        return
    if isinstance(config, str):
        config = LogConfig.model_validate({"level": config})
    writer = log_setup.configure(config, worker)
    straight = config.format == "json" and config.level in ("debug", "info")
    access.configure(config.access, writer if straight else None, worker)
    _configured = True


log = structlog.get_logger("a2a_gateway.call")


def finish(ctx: CallContext, operation: str, error: BaseException | None) -> None:
    """A call's one exit: counted, its span ended, and what its access line says noted on
    ``ctx`` (the transport writes the line once the answer is out:
    gateway/observability/logs/access.py). Once per call: a second finish (a path that
    ended the call and then failed writing its answer) changes nothing, so no call is
    counted twice."""
    if ctx.finished:
        return
    ctx.finished = True
    seconds = time.monotonic() - ctx.facts.started
    ctx.operation = operation
    access.note_error(ctx, error)
    outcome = outcome_of(error)
    record_call(ctx, operation, outcome, seconds)
    tracing.finish(ctx, operation, outcome, error)


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
