"""The resume extension's marks (translators/resume_marks.py): a journaled event's id in
its payload's metadata, whatever the payload, on a copy (the journal keeps the event as
the backend sent it); a Task marked as a gap."""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2 as pb

from translators.resume_marks import EVENT_ID_KEY, GAP_KEY, marked_as_gap, with_event_id

EVENTS = {
    "task": pb.StreamResponse(task=pb.Task(id="t1")),
    "message": pb.StreamResponse(message=pb.Message(message_id="m1")),
    "status_update": pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(task_id="t1")),
    "artifact_update": pb.StreamResponse(
        artifact_update=pb.TaskArtifactUpdateEvent(task_id="t1")),
}


@pytest.mark.parametrize("kind", EVENTS)
def test_every_payload_carries_its_id_on_a_copy(kind: str) -> None:
    event = EVENTS[kind]
    before = event.SerializeToString()
    marked = with_event_id(event, "Mjp0MQ")
    assert getattr(marked, kind).metadata[EVENT_ID_KEY] == "Mjp0MQ"
    assert event.SerializeToString() == before  # the journal's copy is untouched
    getattr(marked, kind).ClearField("metadata")  # the events here had none
    assert marked == event  # nothing else changed


def test_a_gap_is_a_marked_copy_of_the_task() -> None:
    event = pb.StreamResponse(task=pb.Task(id="t1"))
    marked = marked_as_gap(event, "why")
    assert dict(marked.task.metadata[GAP_KEY]) == {"reason": "why"}
    assert GAP_KEY not in event.task.metadata
