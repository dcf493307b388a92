"""Log lines: one write per turn of the event loop; errors and lines off the loop at once."""

from __future__ import annotations

import asyncio
import io
import threading

import pytest

from gateway.log_writer import LineWriter


class Stream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


async def test_the_lines_of_one_turn_are_written_together_when_it_ends() -> None:
    out = Stream()
    writer = LineWriter(out)  # type: ignore[arg-type]
    writer.info("a")
    writer.msg("b")
    assert out.getvalue() == ""  # not before the turn ends
    await asyncio.sleep(0)
    assert (out.getvalue(), out.writes) == ("a\nb\n", 1)
    writer.info("c")
    await asyncio.sleep(0)
    assert (out.getvalue(), out.writes) == ("a\nb\nc\n", 2)


async def test_an_error_is_written_at_once_after_what_was_kept() -> None:
    out = Stream()
    writer = LineWriter(out)  # type: ignore[arg-type]
    writer.info("before")
    writer.error("boom")
    assert out.getvalue() == "before\nboom\n"
    await asyncio.sleep(0)  # the turn's flush finds nothing left
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
    # A loop that stops before its turn ends (shutdown) leaves lines kept: flush (run at
    # process exit) writes them.
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
    """The call line skips structlog's layers (gateway/observe.py) but not its output:
    the same fields in the same order, a worker's index included."""
    import json

    import structlog

    from gateway import observe
    from gateway.log_lines import render_line

    fields = {"request_id": "r1", "tenant": "t", "operation": "SendMessage",
              "outcome": "ok", "duration_ms": 0.25, "forwarded": True}
    for worker in (None, 3):
        def tag(_: object, __: str, event: dict[str, object],
                index: int | None = worker) -> dict[str, object]:
            event["worker"] = index
            return event

        ours, theirs = io.StringIO(), io.StringIO()
        reference = structlog.wrap_logger(
            LineWriter(theirs), processors=[*([] if worker is None else [tag]), render_line],
            wrapper_class=structlog.make_filtering_bound_logger(20))
        reference.info("call", **fields)  # off the loop: written at once
        monkeypatch.setattr(observe, "_worker", worker)
        observe._call_line(LineWriter(ours), dict(fields))  # type: ignore[arg-type]
        mine, ref = json.loads(ours.getvalue()), json.loads(theirs.getvalue())
        assert mine.pop("timestamp") and ref.pop("timestamp")
        assert list(mine.items()) == list(ref.items())
