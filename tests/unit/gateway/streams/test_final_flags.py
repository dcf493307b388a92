"""gateway/streams.final_flags_for: the one choice of a stream's v0.3 `final` flags, made
by the SSE and the gRPC stream servers alike, checked with plain lists of events."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.streams.events import final_flags_for
from translators.versions import V03, V10


def _status(state: int) -> pb.StreamResponse:
    return pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t", status=pb.TaskStatus(state=state)))


TASK = pb.StreamResponse(task=pb.Task(id="t", status=pb.TaskStatus(
    state=pb.TASK_STATE_SUBMITTED)))
WORKING, DONE = _status(pb.TASK_STATE_WORKING), _status(pb.TASK_STATE_COMPLETED)
ASKING = _status(pb.TASK_STATE_INPUT_REQUIRED)


async def _flags(version: str, reads: list[list[pb.StreamResponse]],
                 ) -> list[tuple[str, bool]]:
    async def source() -> AsyncIterator[list[pb.StreamResponse]]:
        for read in reads:
            yield read

    out = []
    async for flagged in final_flags_for(version, source()):
        for item, final in flagged:
            kind = item.WhichOneof("payload")
            state = item.status_update.status.state if kind == "status_update" else 0
            out.append((f"{kind}:{pb.TaskState.Name(state)}", final))
    return out


@pytest.mark.parametrize(("reads", "v03_flags"), [
    # the status that ends the stream is final, whatever read it comes in
    ([[TASK, WORKING], [DONE]], [False, False, True]),
    ([[TASK], [WORKING, ASKING]], [False, False, True]),
    # a backend that closes after a status that ends nothing: that status again, final
    ([[TASK, WORKING]], [False, False, True]),
    # ... but not after a Task: v0.3 puts `final` on status updates only
    ([[TASK]], [False]),
])
async def test_v03_and_v10_flags(reads: list[list[pb.StreamResponse]],
                                 v03_flags: list[bool]) -> None:
    v03 = await _flags(V03, reads)
    v10 = await _flags(V10, reads)
    assert [final for _, final in v03] == v03_flags
    assert [final for _, final in v10] == [False] * len(v10)
    sent = [f"{i.WhichOneof('payload')}" for read in reads for i in read]
    assert [kind.split(":")[0] for kind, _ in v10] == sent
    if len(v03) > len(v10):  # the repeated last status is the one that came last
        assert v03[-1][0] == v03[-2][0]
