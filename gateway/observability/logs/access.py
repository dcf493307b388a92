"""The access line: one log line (event `call`) per HTTP request, gRPC call and stream.

Written when the answer is out (a stream: when it ends), by the transport that knows the
status and the bytes: aiohttp's access-logger hook (:class:`AccessLogger`), the fast lane
(gateway/ingress/fast_lane.py) and the gRPC handlers (gateway/ingress/grpc.py). What the
call itself adds (tenant, operation, dialects, outcome, trace id) comes from its
CallContext, which `observe.finish` completes; a request that never became a call (a
card, a probe, a malformed head) has a line too, without those fields. The fields, their
order and meaning: `gateway.config.logs.ACCESS_FIELDS`, README "Logs".

Every call writes one, so its cost counts: the fields go in one dict, rendered by
gateway/observability/logs/lines.py and written by the process's LineWriter straight (no structlog
layers) in the JSON format; sampling and a field list cost nothing when not configured.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

import structlog
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from gateway.call import CallContext
from gateway.config.logs import AccessLogConfig
from gateway.http.aiohttp_internals import body_bytes_read
from gateway.observability import tracing
from gateway.observability.logs.lines import render_info
from gateway.observability.logs.writer import LineWriter
from translators.errors import A2AError

# Where the ingress leaves a request's CallContext for its access line.
CALL_KEY = web.RequestKey("a2a_gateway.call", CallContext)
CLIENT_CLOSED = 499  # the client went away before its answer (nginx's number)

log = structlog.get_logger("a2a_gateway.call")


class _Settings:
    __slots__ = ("enabled", "fields", "sample", "skip", "worker", "writer")

    def __init__(self) -> None:
        self.enabled = True
        self.sample = 1.0
        self.fields: frozenset[str] | None = None
        self.skip: frozenset[str] = frozenset()
        self.worker: int | None = None
        # The JSON lines' writer, written to straight (None: through structlog, as before
        # logging is configured, below level info, or in the console format).
        self.writer: LineWriter | None = None


_settings = _Settings()


def configure(config: AccessLogConfig, writer: LineWriter | None, worker: int | None) -> None:
    _settings.enabled = config.enabled
    _settings.sample = config.sample
    _settings.fields = None if config.fields is None else frozenset(config.fields)
    _settings.skip = frozenset(config.skip_paths)
    _settings.worker = worker
    _settings.writer = writer


def outcome_of(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    if isinstance(error, asyncio.CancelledError):
        return "CLIENT_CANCELLED"  # the client went away or gave up; not a failure of ours
    if isinstance(error, A2AError):
        return error.kind.reason
    return "INTERNAL_ERROR"


_CANCELLED = asyncio.CancelledError()  # stands for any, with no traceback


def note_error(ctx: CallContext, error: BaseException | None) -> None:
    """Keep ``error`` for ``ctx``'s access line without its traceback where the line does
    not write it: a traceback holds the frames that hold ``ctx``, a cycle only the
    collector frees (a pause for every full collection when thousands of streams end)."""
    if error is None or isinstance(error, A2AError):
        ctx.error = None if error is None else error.with_traceback(None)
    elif isinstance(error, asyncio.CancelledError):
        ctx.error = _CANCELLED
    else:
        ctx.error = error  # a bug of ours: the line writes its traceback


def write(ctx: CallContext | None, client: str | None, status: int | None,
          bytes_in: int, bytes_out: int, seconds: float, method: str | None = None,
          path: str | None = None, grpc_code: str | None = None) -> None:
    """The access line of one request (``ctx``: the call it made, if any)."""
    settings = _settings
    if not settings.enabled:
        return
    if ctx is not None and ctx.logged:
        return
    error = ctx.error if ctx is not None else None
    failed = (error is not None or (status is not None and status >= 400)
              or (grpc_code is not None and grpc_code != "OK"))
    if not failed and (path in settings.skip or (
            settings.sample < 1.0 and random.random() >= settings.sample)):
        return
    if ctx is not None:
        ctx.logged = True
    fields: dict[str, Any] = ({"client": client} if ctx is None
                              else {"request_id": ctx.facts.request_id, "client": client})
    if method is not None:
        fields["method"] = method
        fields["path"] = path
    if ctx is not None and ctx.operation is not None:
        fields["tenant"] = ctx.tenant
        fields["operation"] = ctx.operation
        fields["client_version"] = ctx.client_version
        fields["client_binding"] = ctx.facts.binding
        fields["backend_version"] = ctx.outcome.backend_version
        fields["backend_binding"] = ctx.outcome.backend_binding
    elif ctx is not None:  # refused before its operation was known (bad JSON)
        fields["tenant"] = ctx.tenant
        fields["client_binding"] = ctx.facts.binding
    if status is not None:
        fields["status"] = status
    if grpc_code is not None:
        fields["grpc_code"] = grpc_code
    if ctx is not None:
        fields["outcome"] = outcome_of(error)
        if isinstance(error, A2AError):
            fields["error_code"] = error.kind.code
    fields["bytes_in"] = bytes_in
    fields["bytes_out"] = bytes_out
    fields["duration_ms"] = round(seconds * 1000, 2)
    if ctx is not None:
        _call_fields(ctx, fields, error)
    internal = error is not None and not isinstance(error, A2AError | asyncio.CancelledError)
    if settings.fields is not None:
        fields = {k: v for k, v in fields.items() if k in settings.fields}
    if internal:
        log.error("call", **fields, exc_info=error)  # a bug of ours: with its traceback
        if ctx is not None:
            ctx.error = None  # (see note_error)
    elif settings.writer is not None:
        fields["event"] = "call"
        if settings.worker is not None:
            fields["worker"] = settings.worker
        settings.writer.msg(render_info(fields))
    else:
        log.info("call", **fields)


def _call_fields(ctx: CallContext, fields: dict[str, Any], error: BaseException | None,
                 ) -> None:
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


class AccessLogger(AbstractAccessLogger):
    """aiohttp's hook after each answer is written (web.AppRunner's access_log_class)."""

    @property
    def enabled(self) -> bool:
        return _settings.enabled

    def log(self, request: web.BaseRequest, response: web.StreamResponse,
            time: float) -> None:
        content = request.content
        write(request.get(CALL_KEY), request.remote, response.status,
              body_bytes_read(content), response.body_length, time,
              request.method, request.path)


def client_gone(request: web.BaseRequest) -> None:
    """The access line of a request whose handler was cancelled (its client left): no
    answer was written, so aiohttp's hook is not called."""
    _line_now(request, CLIENT_CLOSED, 0)


def answered_early(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """The access line of a stream whose client had its end before the handler's (the
    shutdown's drain, the driver reading on into the journal): written now, not when
    aiohttp's hook runs after the handler."""
    _line_now(request, response.status, response.body_length)


def _line_now(request: web.BaseRequest, status: int, bytes_out: int) -> None:
    ctx: CallContext | None = request.get(CALL_KEY)
    seconds = time.monotonic() - ctx.facts.started if ctx is not None else 0.0
    write(ctx, request.remote, status, body_bytes_read(request.content), bytes_out,
          seconds, request.method, request.path)


def grpc_peer(peer: str | None) -> str | None:
    """The client's address in a gRPC peer string (`ipv4:1.2.3.4:5`, `ipv6:[::1]:5`), as
    HTTP's access lines write it."""
    if not peer:
        return None
    kind, _, where = peer.partition(":")
    if kind == "ipv4":
        return where.rpartition(":")[0] or where
    if kind == "ipv6":
        return where.rpartition(":")[0].strip("[]") or where
    return peer


# aiohttp's runner wants a logger to enable its hook; AccessLogger writes lines itself.
ACCESS_LOGGER = logging.getLogger("a2a_gateway.access")
