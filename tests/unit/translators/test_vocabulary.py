"""translators/vocabulary.py: the one home of what task states mean (terminal, interrupted,
the end of a v0.3 stream, the end of a task), pinned state by state."""

from __future__ import annotations

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from translators.j03.objects import STATE_P10_TO_J03
from translators.vocabulary import (
    DATA_COMPAT_FLAG,
    IMPLIED_MEDIA_TYPE,
    INTERRUPTED_STATES,
    TERMINAL,
    TERMINAL_STATES,
    ends_stream,
    ends_task,
    ends_v03_stream,
)

# Every named state, and what it does: (terminal, ends a stream).
STATES = {
    "TASK_STATE_UNSPECIFIED": (False, False),
    "TASK_STATE_SUBMITTED": (False, False),
    "TASK_STATE_WORKING": (False, False),
    "TASK_STATE_COMPLETED": (True, True),
    "TASK_STATE_FAILED": (True, True),
    "TASK_STATE_CANCELED": (True, True),
    "TASK_STATE_REJECTED": (True, True),
    "TASK_STATE_INPUT_REQUIRED": (False, True),
    "TASK_STATE_AUTH_REQUIRED": (False, True),
}


def test_every_v10_state_is_classified() -> None:
    assert set(STATES) == set(pb.TaskState.keys())


def test_terminal_and_interrupted_sets() -> None:
    assert {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
                               "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"} == TERMINAL_STATES
    assert {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"} == INTERRUPTED_STATES
    assert {pb.TASK_STATE_COMPLETED, pb.TASK_STATE_FAILED, pb.TASK_STATE_CANCELED,
                        pb.TASK_STATE_REJECTED} == TERMINAL


def test_the_sets_in_v03_spellings() -> None:
    """v0.3 JSON-RPC names the same states in kebab case (reference §3.1)."""
    assert {STATE_P10_TO_J03[s] for s in TERMINAL_STATES} == {
        "completed", "failed", "canceled", "rejected"}
    assert {STATE_P10_TO_J03[s] for s in INTERRUPTED_STATES} == {
        "input-required", "auth-required"}


def test_v03_proto_numbers_the_states_alike() -> None:
    """The number sets serve the v0.3 proto too: each state has the same number there
    (its one spelling difference, CANCELLED, included)."""
    v03_numbers = {name.replace("CANCELLED", "CANCELED"): number
                   for name, number in v03.TaskState.items()}
    assert {v03_numbers[s] for s in TERMINAL_STATES} == TERMINAL
    ends = {v03_numbers[s] for s in TERMINAL_STATES | INTERRUPTED_STATES}
    assert all(ends_stream(n) for n in ends)
    assert not any(ends_stream(n) for n in set(v03_numbers.values()) - ends)


@pytest.mark.parametrize("name", sorted(STATES))
def test_each_state(name: str) -> None:
    terminal, ends = STATES[name]
    state = pb.TaskState.Value(name)
    assert ends_stream(state) is ends
    update = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t", status=pb.TaskStatus(state=state)))
    task = pb.StreamResponse(task=pb.Task(id="t", status=pb.TaskStatus(state=state)))
    # A v0.3 stream ends at a status update only; a task ends at either event.
    assert ends_v03_stream(update) is ends
    assert ends_v03_stream(task) is False
    assert ends_task(update) is terminal
    assert ends_task(task) is terminal


def test_unnamed_state_and_other_events_end_nothing() -> None:
    """A state no version names (from a newer backend) ends neither the stream nor the
    task; a message or an artifact update never does."""
    update = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(task_id="t"))
    update.status_update.status.state = 42  # type: ignore[assignment]
    assert not ends_stream(42) and not ends_v03_stream(update) and not ends_task(update)
    for event in (pb.StreamResponse(message=pb.Message(message_id="m")),
                  pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(task_id="t")),
                  pb.StreamResponse()):
        assert not ends_v03_stream(event) and not ends_task(event)


def test_data_compat_flag_is_pys_key() -> None:
    """The metadata key py's SDK writes and reads for a wrapped non-object data part."""
    assert DATA_COMPAT_FLAG == "data_part_compat"


def test_implied_media_types() -> None:
    """What a text or a data part's mediaType may say without any loss toward v0.3."""
    assert IMPLIED_MEDIA_TYPE == {"text": "text/plain", "data": "application/json"}
