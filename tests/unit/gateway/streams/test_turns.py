"""The open streams take their turns one per pass of the loop, in order (gateway/streams/turns.py);
while a call is starting their turns are short, and a call stops counting as starting
when answered or after PRIORITY."""

from __future__ import annotations

import asyncio

import pytest

from gateway.config.models import LimitsConfig
from gateway.ingress.connections import ConnectionGuard
from gateway.streams import turns
from gateway.streams.turns import Openings, Turn
from tests.support.fake_time import run_in_fake_time


async def test_an_opening_counts_until_answered_once() -> None:
    openings = Openings()
    first, second = openings.begin(), openings.begin()
    assert openings.pending == 2
    openings.end(first)
    openings.end(first)  # a second end changes nothing
    assert openings.pending == 1
    openings.end(second)
    assert openings.pending == 0


def test_a_call_stops_counting_as_starting_after_priority(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "PRIORITY", 0.25)  # the sleeps' sums exact in binary
    monkeypatch.setattr(turns, "TURN", 60.0)
    monkeypatch.setattr(turns, "SHORT_TURN", 0.0)

    async def main() -> None:  # on the loop's clock, which only the sleeps move
        openings = Openings()
        openings.begin()  # a call waiting on a slow backend
        turn = Turn(openings)
        assert openings.pending == 1 and turn.over()
        await asyncio.sleep(0.125)
        await turn.pass_on()  # an open stream's next turn looks again
        assert openings.pending == 1  # still within PRIORITY
        await asyncio.sleep(0.125)
        await turn.pass_on()
        assert openings.pending == 0  # PRIORITY has passed
        assert not turn.over()  # full turns again

    run_in_fake_time(main())


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


class _Passes:
    """Counts the event loop's passes: a callback that schedules itself once per pass."""

    def __init__(self) -> None:
        self.count = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


async def test_the_open_streams_take_their_turns_one_per_pass_of_the_loop() -> None:
    # With sleep(0) every stream's next turn ran in the same pass, and the loop polled its
    # sockets only after a round of all of them: a new call's request waited that long.
    openings = Openings()
    passes = _Passes()
    resumed: list[tuple[str, int]] = []

    async def stream(name: str) -> None:
        await Turn(openings).pass_on()
        resumed.append((name, passes.count))

    await asyncio.gather(*(stream(name) for name in "abcd"))
    passes.stop()
    assert [name for name, _ in resumed] == list("abcd")  # in the order they waited
    counts = [count for _, count in resumed]
    assert len(set(counts)) == 4, f"two turns in one pass of the loop: {resumed}"


async def test_a_stream_cancelled_while_waiting_for_its_turn_leaves_the_rotation() -> None:
    openings = Openings()
    loops = [asyncio.create_task(Turn(openings).pass_on()) for _ in range(3)]
    await asyncio.sleep(0)  # all three wait
    loops[1].cancel()
    await asyncio.wait_for(asyncio.gather(loops[0], loops[2]), 1.0)
    assert loops[1].cancelled()
    await asyncio.wait_for(Turn(openings).pass_on(), 1.0)  # the rotation goes on


def test_the_rotation_serves_a_new_event_loop() -> None:
    openings = Openings()

    async def streams_left_waiting() -> None:
        openings.rotation.wait()
        openings.rotation.wait()  # its release would come after the loop has stopped

    first = asyncio.new_event_loop()
    first.run_until_complete(streams_left_waiting())
    first.close()

    async def next_stream() -> None:
        await asyncio.wait_for(Turn(openings).pass_on(), 1.0)

    asyncio.run(next_stream())


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
