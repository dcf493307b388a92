"""Every line the process writes on stderr, in one format: structlog's lines, and
through structlog's stdlib bridge (`ProcessorFormatter`) every library's log record
(asyncio, aiohttp, grpc, redis, opentelemetry), `warnings.warn` (py.warnings), and an
exception nobody caught (sys/threading/unraisable hooks): a log shipper reads one JSON
object per line (README "Logs").

Libraries log what is noise to an operator at levels meant for their own authors (a
malformed request head is an aiohttp `exception` with a traceback; a TLS client hanging up
is an asyncio warning): :func:`library_level` maps those to the level they mean here, and
the traceback of a client's bad bytes is dropped — it quotes the bytes, credentials
included. Any library message, and any traceback, has the values of credential-looking
headers (`Authorization: ...`, `X-Api-Key=...`) replaced by `[redacted]`
(gateway/observability/logs/lines.py, redact).
"""

from __future__ import annotations

import logging
import ssl
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import structlog
from structlog.processors import format_exc_info
from structlog.typing import EventDict, Processor, WrappedLogger

from gateway.config.logs import LogConfig
from gateway.http.aiohttp_internals import HttpProcessingError
from gateway.observability.logs.lines import redact, render_unstamped
from gateway.observability.logs.writer import LineWriter, LineWriterFactory

# asyncio's messages that are a client's doing, not the gateway's, by how they start.
_ASYNCIO_LEVELS = (
    ("returning true from eof_received()", logging.DEBUG),  # TLS: the client's close
    ("SSL connection is closed", logging.DEBUG),
    ("socket.send() raised exception", logging.INFO),  # the client went away
    ("SSL handshake failed", logging.INFO),
    ("Fatal error on SSL transport", logging.INFO),
    ("SSL error in data received", logging.INFO),
)


def library_level(record: logging.LogRecord) -> int:
    """The level a library's record means to an operator of the gateway (may rewrite a
    record about a client's bad bytes: no traceback, no quoted bytes)."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, HttpProcessingError):
        # A malformed request head: aiohttp answers 400 and the access line says so; its
        # message quotes the bad line, which may hold a credential.
        record.msg, record.args = "malformed request: %s", (type(exc).__name__,)
        record.exc_info = record.exc_text = None
        return logging.DEBUG
    if record.name == "asyncio" and isinstance(record.msg, str):
        for start, level in _ASYNCIO_LEVELS:
            if record.msg.startswith(start):
                if isinstance(exc, ssl.SSLError | OSError):
                    record.exc_info = record.exc_text = None
                return min(level, record.levelno)
    if record.name.startswith("aiohttp") and isinstance(exc, ConnectionError):
        record.exc_info = record.exc_text = None
        return min(logging.INFO, record.levelno)
    return record.levelno


class _Levels(logging.Filter):
    """Maps library records to their level here, then drops those below ``level``."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        level = library_level(record)
        if level != record.levelno:
            record.levelno, record.levelname = level, logging.getLevelName(level)
        return level >= self.level


class _ToWriter(logging.Handler):
    """A stdlib handler writing each record's line through the process's LineWriter (the
    same lines, order and timestamps as structlog's)."""

    def __init__(self, writer: LineWriter, fallback: Callable[[dict[str, Any]], str]) -> None:
        super().__init__()
        self.writer = writer
        self.fallback = fallback

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception as exc:  # not logging.handleError: it prints a plain traceback
            line = self.fallback({"event": "log record not written", "logger": record.name,
                                  "level": "error", "error": type(exc).__name__})
        if record.levelno >= logging.ERROR:
            self.writer.write_now(line)
        else:
            self.writer.msg(line)


def _foreign(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """A library's record: its logger's name, its message and traceback redacted."""
    record: logging.LogRecord | None = event_dict.get("_record")
    if record is not None:
        event_dict["logger"] = record.name
    event = event_dict.get("event")
    if isinstance(event, str):
        event_dict["event"] = redact(event)
    if "exc_info" in event_dict:
        event_dict = format_exc_info(_, __, event_dict)
        event_dict["exception"] = redact(event_dict["exception"])
    return event_dict


def configure(config: LogConfig, worker: int | None) -> LineWriter:
    """Route every line of the process to stderr as ``config`` says; the writer they share."""
    level = logging.getLevelName(config.level.upper())
    json = config.format == "json"
    factory = LineWriterFactory(sys.stderr, json=json)
    tag: list[Processor] = []
    if worker is not None:
        def worker_tag(_: Any, __: str, event: EventDict) -> EventDict:
            event["worker"] = worker
            return event
        tag = [worker_tag]
    render: list[Processor]
    if json:
        render = [render_unstamped]  # level, traceback, JSON; the writer stamps the time
    else:
        render = [structlog.processors.add_log_level,
                  structlog.processors.TimeStamper(fmt="iso", utc=True),
                  structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), sort_keys=False)]
    structlog.configure(
        # No structlog.contextvars: nothing binds any, and merging them walks the whole
        # context of every line.
        processors=[*tag, *render],
        # Straight to the writer: the stdlib logging layer cost ~10% of a call's CPU
        # (bench/); one write per turn of the event loop (gateway/observability/logs/writer.py).
        logger_factory=factory,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=True,
    )
    handler = _ToWriter(factory.writer, lambda event: str(render[-1](None, "error", event)))
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_foreign],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tag,
                    *render]))
    handler.addFilter(_Levels(level))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # warnings.warn -> the py.warnings logger -> JSON
    _catch_uncaught()
    return factory.writer


def _catch_uncaught() -> None:
    """An exception nobody caught is one error line too, not Python's plain traceback."""
    uncaught = logging.getLogger("a2a_gateway.uncaught")

    def on_exception(kind: type[BaseException], exc: BaseException,
                     tb: TracebackType | None) -> None:
        uncaught.error("uncaught exception", exc_info=(kind, exc, tb))

    def on_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        uncaught.error("uncaught exception in a thread",
                       exc_info=(args.exc_type, args.exc_value, args.exc_traceback))

    def on_unraisable(args: Any) -> None:
        uncaught.error("exception ignored: %s", args.err_msg or "unraisable",
                       exc_info=(args.exc_type, args.exc_value, args.exc_traceback)
                       if args.exc_value is not None else None)

    sys.excepthook = on_exception
    threading.excepthook = on_thread
    sys.unraisablehook = on_unraisable
