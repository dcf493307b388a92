"""Log lines: kept up to a time or a size and written together; errors and lines off the
loop at once;
every line in timestamp order, library records through the stdlib bridge (JSON, mapped
levels, no quoted credentials); the access line's sampling, fields and config."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import textwrap
import threading
from datetime import datetime
from typing import Any

import pytest

from gateway.observability.logs.writer import LineWriter
from tests.support.waiting import timers_due_after


class Stream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


async def test_the_lines_kept_are_written_together_when_their_time_is_up() -> None:
    out = Stream()
    writer = LineWriter(out, every=0.01)  # type: ignore[arg-type]
    writer.info("a")
    writer.msg("b")
    await asyncio.sleep(0)
    assert out.getvalue() == ""  # not when the turn ends: later, with the others
    await timers_due_after(0.02)
    assert (out.getvalue(), out.writes) == ("a\nb\n", 1)
    writer.info("c")
    await timers_due_after(0.02)
    assert (out.getvalue(), out.writes) == ("a\nb\nc\n", 2)


async def test_the_lines_kept_are_written_at_once_when_they_reach_the_size_bound() -> None:
    out = Stream()
    writer = LineWriter(out, every=3600, keep=10)  # type: ignore[arg-type]
    writer.info("12345")
    assert out.getvalue() == ""
    writer.info("67890")  # 10 characters kept: written now, not in an hour
    assert (out.getvalue(), out.writes) == ("12345\n67890\n", 1)
    writer.info("x")
    assert out.getvalue() == "12345\n67890\n"
    writer.flush()
    assert (out.getvalue(), out.writes) == ("12345\n67890\nx\n", 2)


async def test_a_write_due_stays_due_after_the_size_bound_wrote() -> None:
    out = Stream()
    writer = LineWriter(out, every=0.01, keep=10)  # type: ignore[arg-type]
    armed: list[float] = []
    loop = asyncio.get_running_loop()
    call_later = loop.call_later

    def counted(delay: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__self__", None) is writer:  # the writer's, not _after's
            armed.append(delay)
        return call_later(delay, callback, *args, **kwargs)

    loop.call_later = counted  # type: ignore[method-assign]
    try:
        writer.info("1")
        writer.info("234567890")  # the size bound: written now
        writer.info("x")  # the write already due takes it: no second one armed
        assert (out.getvalue(), armed) == ("1\n234567890\n", [0.01])
        await timers_due_after(0.02)
        assert (out.getvalue(), out.writes) == ("1\n234567890\nx\n", 2)
        writer.info("y")  # nothing due any more: a write is armed again
        assert armed == [0.01, 0.01]
    finally:
        del loop.call_later
    await timers_due_after(0.02)
    assert out.getvalue().endswith("x\ny\n")


def test_the_default_bounds_are_the_documented_ones() -> None:
    # docs/observability.md names them: 50 ms, 64 KiB.
    writer = LineWriter(Stream())  # type: ignore[arg-type]
    assert (writer.every, writer.keep) == (0.05, 65536)


async def test_an_error_is_written_at_once_after_what_was_kept() -> None:
    out = Stream()
    writer = LineWriter(out)  # type: ignore[arg-type]
    writer.info("before")
    writer.error("boom")
    assert out.getvalue() == "before\nboom\n"
    writer.flush()  # the timed flush finds nothing left
    assert (out.getvalue(), out.writes) == ("before\nboom\n", 1)


def test_lines_off_the_loop_are_written_at_once() -> None:
    out = Stream()
    writer = LineWriter(out)  # type: ignore[arg-type]
    writer.info("no loop")
    assert out.getvalue() == "no loop\n"
    thread = threading.Thread(target=writer.warning, args=("thread",))
    thread.start()
    thread.join()
    assert out.getvalue() == "no loop\nthread\n"


def test_kept_lines_are_written_by_flush() -> None:
    # A loop that stops before their time is up (shutdown) leaves lines kept: flush (run
    # at process exit) writes them.
    out = Stream()
    writer = LineWriter(out)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()

    async def log() -> None:
        writer.info("last words")
    loop.run_until_complete(log())
    loop.close()  # its flush callback never runs
    writer.flush()
    assert out.getvalue() == "last words\n"


def test_a_calls_line_is_the_one_structlog_would_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The access line skips structlog's layers (gateway/observability/logs/access.py) but
    not its output: the same fields in the same order, a worker's index included."""
    import structlog

    from gateway.call import CallContext, ClientFacts
    from gateway.config.logs import AccessLogConfig
    from gateway.observability.logs import access
    from gateway.observability.logs.lines import render_line, stamp

    ctx = CallContext(ClientFacts("JSONRPC", request_id="r1"), "0.3",
                      tenant="t", operation="SendMessage")
    for worker in (None, 3):
        def tag(_: object, __: str, event: dict[str, object],
                index: int | None = worker) -> dict[str, object]:
            event["worker"] = index
            return event

        ours, theirs = io.StringIO(), io.StringIO()
        reference = structlog.wrap_logger(
            LineWriter(theirs), processors=[*([] if worker is None else [tag]), render_line],
            wrapper_class=structlog.make_filtering_bound_logger(20))
        monkeypatch.setattr(access, "log", reference)
        access.configure(AccessLogConfig(), None, worker)
        access.write(ctx, "127.0.0.1", 200, 10, 20, 0.001, "POST", "/")  # off the loop
        access.configure(AccessLogConfig(), LineWriter(ours, stamp), worker)
        ctx.logged = False  # a call's line is written once: the same call again
        access.write(ctx, "127.0.0.1", 200, 10, 20, 0.001, "POST", "/")
        ctx.logged = False
        mine, ref = json.loads(ours.getvalue()), json.loads(theirs.getvalue())
        assert mine.pop("timestamp") and ref.pop("timestamp")
        assert list(mine.items()) == list(ref.items())
        assert mine["status"] == 200 and mine["operation"] == "SendMessage"
    access.configure(AccessLogConfig(), None, None)


async def test_lines_are_written_in_timestamp_order_whoever_writes_them() -> None:
    """A line kept for its flush, then an error and a line from another thread
    (both written at once): they leave in the order written, and their timestamps (put in
    by the writer, under its lock) in the same order."""
    from gateway.observability.logs.lines import render_unstamped, stamp

    out = Stream()
    writer = LineWriter(out, stamp)  # type: ignore[arg-type]

    def line(name: str) -> str:
        return render_unstamped(None, "info", {"event": name})

    writer.info(line("kept"))
    thread = threading.Thread(target=writer.warning, args=(line("thread"),))
    thread.start()
    thread.join()
    writer.error(line("error"))
    writer.info(line("later"))
    writer.flush()
    lines = [json.loads(text) for text in out.getvalue().splitlines()]
    assert [x["event"] for x in lines] == ["kept", "thread", "error", "later"]
    stamps = [datetime.fromisoformat(x["timestamp"]) for x in lines]  # a whole second has no fraction: text order is not time order
    assert stamps == sorted(stamps)


def run_logging(script: str, level: str = "info") -> list[dict[str, object]]:
    """``script`` in a fresh interpreter after configure_logging(level): its stderr lines,
    each of which must be a JSON object."""
    prelude = ("import asyncio, logging, warnings, structlog\n"
               "from gateway.observability.observe import configure_logging\n"
               f"configure_logging({level!r})\nlog = structlog.get_logger('t')\n")
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout == ""
    lines = []
    for raw in done.stderr.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            raise AssertionError(f"not a JSON line: {raw!r}") from None
    return lines


def test_library_records_come_through_the_bridge_in_order_and_at_their_levels() -> None:
    lines = run_logging("""
        async def main():
            log.info("first")  # kept for its flush
            logging.getLogger("asyncio").warning(
                "returning true from eof_received() has no effect when using ssl")
            logging.getLogger("redis").warning("pool said %s", "hi")
            from aiohttp.http_exceptions import BadHttpMessage
            try:
                raise BadHttpMessage("Invalid header value char: Authorization: Bearer S3")
            except BadHttpMessage:
                logging.getLogger("aiohttp.server").exception("Error handling request")
            logging.getLogger("grpc._server").error("peer said X-Api-Key=S3 oops")
            warnings.warn("an old thing", UserWarning)
            try:
                raise ValueError("bad header Authorization: Bearer S3")
            except ValueError:
                log.exception("ours")
            log.info("last")
        asyncio.run(main())
        raise RuntimeError("uncaught")
        """)
    events = [(x["event"][:20], x.get("logger"), x["level"]) for x in lines]
    assert events == [
        ("first", None, "info"),  # the stdlib record after it, not before
        ("pool said hi", "redis", "warning"),
        ("peer said X-Api-Key=", "grpc._server", "error"),
        (lines[3]["event"][:20], "py.warnings", "warning"),
        ("ours", None, "error"),
        ("last", None, "info"),
        ("uncaught exception", "a2a_gateway.uncaught", "error")]
    assert "ValueError: bad header Authorization: [redacted]" in lines[4]["exception"]
    assert "UserWarning: an old thing" in lines[3]["event"]
    assert lines[2]["event"] == "peer said X-Api-Key=[redacted]"
    assert "S3" not in json.dumps(lines) and "RuntimeError: uncaught" in lines[6]["exception"]
    stamps = [datetime.fromisoformat(x["timestamp"]) for x in lines]  # a whole second has no fraction: text order is not time order
    assert stamps == sorted(stamps)


def test_a_malformed_heads_record_is_one_short_debug_line() -> None:
    lines = run_logging("""
        from aiohttp.http_exceptions import BadHttpMessage
        try:
            raise BadHttpMessage("Invalid header value char: b'Authorization: Bearer S3'")
        except BadHttpMessage:
            logging.getLogger("aiohttp.server").exception("Error handling request")
        logging.getLogger("asyncio").warning(
            "returning true from eof_received() has no effect when using ssl")
        """, level="debug")
    mine = [x for x in lines if x.get("logger") != "asyncio" or "eof" in x["event"]]
    assert [(x["event"], x["level"]) for x in mine] == [
        ("malformed request: BadHttpMessage", "debug"),
        ("returning true from eof_received() has no effect when using ssl", "debug")]
    assert "exception" not in mine[0]


def test_access_sampling_fields_and_skipped_paths_keep_every_failure() -> None:
    from gateway.call import CallContext, ClientFacts
    from gateway.config.logs import AccessLogConfig
    from gateway.observability.logs import access
    from gateway.observability.logs.lines import stamp
    from translators.errors import a2a_error

    out = io.StringIO()
    config = AccessLogConfig(sample=0.0, fields=["status", "outcome", "error_code"])
    access.configure(config, LineWriter(out, stamp), None)
    try:
        ok = CallContext(ClientFacts("GRPC"), "1.0", operation="GetTask")
        failed = CallContext(ClientFacts("GRPC"), "1.0", operation="GetTask")
        access.note_error(failed, a2a_error("TaskNotFoundError"))
        access.write(ok, "::1", 200, 1, 1, 0.001, "POST", "/")  # sampled out
        access.write(failed, "::1", 200, 1, 1, 0.001, "POST", "/")  # an A2A error in a 200
        access.write(None, "::1", 503, 0, 1, 0.001, "GET", "/readyz")  # a failed probe
        access.configure(AccessLogConfig(), LineWriter(out, stamp), None)
        access.write(None, "::1", 200, 0, 1, 0.001, "GET", "/healthz")  # skipped path
        access.write(ok, None, None, 1, 1, 0.001, grpc_code="CANCELLED")  # not OK: kept
        lines = [json.loads(text) for text in out.getvalue().splitlines()]
        assert [{k: v for k, v in x.items() if k not in ("level", "timestamp")}
                for x in lines[:2]] == [
            {"status": 200, "outcome": "TASK_NOT_FOUND", "error_code": -32001, "event": "call"},
            {"status": 503, "event": "call"}]
        assert (len(lines), lines[2]["grpc_code"], lines[2]["operation"]) == \
            (3, "CANCELLED", "GetTask")
    finally:
        access.configure(AccessLogConfig(), None, None)


def test_the_older_log_level_key_still_sets_the_level() -> None:
    from gateway.config.models import GatewayConfig

    tenants = {"t": {"backend": {"url": "http://127.0.0.1:1/", "version": "0.3"}}}
    old = GatewayConfig.model_validate({"tenants": tenants, "log_level": "warning"})
    assert (old.log.level, old.log.format) == ("warning", "json")
    both = GatewayConfig.model_validate({"tenants": tenants, "log_level": "warning",
                                         "log": {"level": "debug", "format": "console"}})
    assert (both.log.level, both.log.format) == ("debug", "console")
    with pytest.raises(ValueError, match="unknown access field"):
        GatewayConfig.model_validate({"tenants": tenants, "log": {"access": {
            "fields": ["status", "password"]}}})


def test_the_console_format_is_text_for_a_person_without_colors_off_a_tty() -> None:
    script = ("import logging, structlog\n"
              "from gateway.config.logs import LogConfig\n"
              "from gateway.observability.observe import configure_logging\n"
              "configure_logging(LogConfig.model_validate({'format': 'console'}), 2)\n"
              "structlog.get_logger('t').info('hello', tenant='demo')\n"
              "logging.getLogger('redis').warning('Authorization: Bearer S3')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    first, second = done.stderr.splitlines()
    assert "[info     ] hello" in first and first.endswith("tenant=demo worker=2")
    assert "[warning  ] Authorization: [redacted]" in second and "[redis]" in second
    assert "\x1b[" not in done.stderr  # stderr is a pipe here: no color codes
