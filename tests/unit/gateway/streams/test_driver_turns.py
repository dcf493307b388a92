"""The stream driver and the turns it takes (gateway/streams/driver.py, turns.py): a
stream's first event goes out before the stream lets the others run, also while calls
are starting (every turn is then one event long). Found by `make bench`: with the check
before each event, a new stream's first event waited a whole round of the other streams'
turns, and the first event's added latency under 16 streams went from +0.9 to +3.0 ms."""

from __future__ import annotations

import pytest

from gateway.streams import turns
from gateway.streams.driver import drive
from gateway.streams.registry import Streams
from tests.unit.gateway.streams.test_stream_filters import (
    WORKING,
    ListSink,
    a_call,
    chunk,
    plan,
    reads_of,
    status,
)


class LoggingSink(ListSink):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    async def flush(self, due: bool) -> None:
        if self.framed:
            self.log.append("write " + ",".join(name for name, _ in self.framed))
        await super().flush(due)


async def test_a_stream_s_first_event_is_written_before_it_lets_the_others_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []

    async def pass_on(self: turns.Turn) -> None:
        log.append("pass")

    monkeypatch.setattr(turns.Turn, "pass_on", pass_on)
    streams = Streams()
    streams.openings.begin()  # a call is starting: every turn is over after one event
    call = a_call()
    sink = LoggingSink(log)
    reads = reads_of([status(WORKING), chunk("a"), chunk("b")], [chunk("c")])
    assert await drive(call, plan(call, reads), sink, streams, "JSONRPC") == "end"  # type: ignore[arg-type]
    assert log[0] == "write TASK_STATE_WORKING", log
    # ... then one event per turn, and the next read's first event framed at once too.
    assert log == ["write TASK_STATE_WORKING", "pass", "write a", "pass", "write b", "pass",
                   "write c", "pass"], log
    assert sink.sent() == [("TASK_STATE_WORKING", False), ("a", False), ("b", False),
                           ("c", False)]
