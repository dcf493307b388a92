"""The gRPC egress spreads streams over channels of STREAMS_PER_CONNECTION each, and
closes the channels a burst opened once their streams end (the 10,000-idle-streams bench
found 100 connections left open after every stream had closed)."""

from __future__ import annotations

from typing import Any

from gateway.egress.grpc import STREAMS_PER_CONNECTION, _StreamChannels


class Channel:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


async def test_a_burst_of_streams_leaves_one_channel_open() -> None:
    made: list[Channel] = []

    def make() -> Any:
        made.append(Channel())
        return made[-1]

    channels = _StreamChannels(make)
    entries = [channels.acquire() for _ in range(3 * STREAMS_PER_CONNECTION + 1)]
    assert len(made) == 4
    assert len({id(e[0]) for e in entries[:STREAMS_PER_CONNECTION]}) == 1
    for entry in entries:
        await channels.release(entry)
    assert [c.closed for c in made].count(False) == 1  # one kept warm for the next stream
    again = channels.acquire()
    assert not again[0].closed and len(made) == 4
    await channels.release(again)
    await channels.close()
    assert all(c.closed for c in made)
