"""The drain and a step it must not cut (Streams.uncut, a gRPC write): the step ends
whole, then the stream ends there, or, one that can be read on (on_drain), ends for its
client there and goes on until the drain's deadline."""

from __future__ import annotations

import asyncio

import pytest

from gateway.streams.registry import Streams


async def _stream(streams: Streams, step: asyncio.Event, leave: bool | None,
                  after: list[str]) -> None:
    with streams.track("test"):
        if leave is not None:
            streams.on_drain(lambda: leave)
        with streams.uncut():
            await step.wait()  # the write the drain lets finish
        after.append("went on")
        await asyncio.Event().wait()  # read on, until the drain's deadline


@pytest.mark.parametrize(("leave", "went_on"), [(True, True), (False, False), (None, False)])
async def test_a_step_under_way_at_the_drain_ends_whole_then_leaves_or_ends(
        leave: bool | None, went_on: bool) -> None:
    streams, step, after = Streams(), asyncio.Event(), []
    task = asyncio.ensure_future(_stream(streams, step, leave, after))
    await asyncio.sleep(0)  # in its step
    draining = asyncio.ensure_future(streams.drain(0.3))
    await asyncio.sleep(0)
    assert not task.done()  # not cut mid-step
    step.set()
    await asyncio.wait_for(draining, 5)
    assert task.cancelled()  # at the step's end, or (read on) at the deadline
    assert after == (["went on"] if went_on else [])
