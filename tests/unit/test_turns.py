"""Starting calls go before the open streams (gateway/turns.py), within bounds: a hold
ends when nothing is starting or after HOLD, the streams keep every other HOLD, and a
call stops counting as starting after PRIORITY."""

from __future__ import annotations

import asyncio

import pytest

from gateway import turns
from gateway.config import LimitsConfig
from gateway.ingress.connections import ConnectionGuard
from gateway.turns import Openings, Turn


async def test_nothing_starting_no_hold() -> None:
    openings = Openings()
    assert openings.hold() is None
    opening = openings.begin()
    openings.end(opening)
    openings.end(opening)  # a second end changes nothing
    assert openings.pending == 0
    assert openings.hold() is None


async def test_a_hold_ends_when_the_last_opening_is_answered() -> None:
    openings = Openings()
    first, second = openings.begin(), openings.begin()
    gate = openings.hold()
    assert gate is not None and openings.hold() is gate  # every stream waits on one gate
    openings.end(first)
    assert not gate.done()
    openings.end(second)
    assert gate.done()


async def test_a_hold_lasts_hold_at_most_and_the_streams_then_get_their_half() -> None:
    openings = Openings()
    openings.begin()  # never answered
    loop = asyncio.get_running_loop()
    started = loop.time()
    gate = openings.hold()
    assert gate is not None
    await asyncio.wait_for(gate, 1.0)
    assert loop.time() - started >= turns.HOLD * 0.9
    assert openings.hold() is None  # the streams' turn, though a call is still starting
    await asyncio.sleep(turns.HOLD * 1.2)
    assert openings.hold() is not None


async def test_a_call_stops_counting_as_starting_after_priority(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "PRIORITY", 0.01)
    openings = Openings()
    openings.begin()  # a call waiting on a slow backend
    assert openings.pending == 1
    await asyncio.sleep(0.02)
    assert openings.hold() is None
    assert openings.pending == 0


async def test_a_cancelled_stream_does_not_end_the_others_wait() -> None:
    openings = Openings()
    opening = openings.begin()
    first, second = Turn(openings), Turn(openings)
    waiting = [asyncio.create_task(first.pass_on()), asyncio.create_task(second.pass_on())]
    await asyncio.sleep(0)
    waiting[0].cancel()
    await asyncio.sleep(0)
    assert waiting[0].cancelled() and not waiting[1].done()
    openings.end(opening)
    await asyncio.wait_for(waiting[1], 1.0)


async def test_turns_are_short_while_a_call_is_starting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "TURN", 60.0)
    monkeypatch.setattr(turns, "SHORT_TURN", 0.0)
    openings = Openings()
    turn = Turn(openings)
    assert not turn.over()
    opening = openings.begin()
    assert turn.over()
    openings.end(opening)
    assert not turn.over()


class _Inner(asyncio.Protocol):
    def data_received(self, data: bytes) -> None:
        pass


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def test_a_connection_starts_one_opening_per_request_and_ends_it() -> None:
    openings = Openings()
    guard = ConnectionGuard(LimitsConfig(), openings)
    conn = guard.factory(_Inner)()
    conn.connection_made(_Transport())
    conn.data_received(b"POST / HTTP/1.1\r\n")
    conn.data_received(b"Host: x\r\n\r\n")  # the same request: still one
    assert openings.pending == 1
    conn.request_started()  # type: ignore[attr-defined]
    conn.answered()  # type: ignore[attr-defined]  # a stream's first event is out
    assert openings.pending == 0
    conn.request_finished()  # type: ignore[attr-defined]
    conn.data_received(b"POST / HTTP/1.1\r\n")  # the next request on the connection
    assert openings.pending == 1
    conn.connection_lost(None)  # the client went away before its answer
    assert openings.pending == 0
