"""translators/answer_diff.py on random tasks: an answer never differs from itself, nor
from another run's answer that differs only in ids and times (even where its texts quote
them), nor from its own stream; swapping the sides swaps each difference; the report's
view of any answer is JSON of bounded size."""

from __future__ import annotations

import json
import string
import uuid
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.message import Message as ProtoMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translators.answer_diff import CompareRules, Difference, compare, render
from translators.answer_view import json_size

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ID_FIELDS = {"id", "context_id", "task_id", "message_id", "artifact_id"}

json_leaves = (st.none() | st.booleans() | st.integers(-(2**40), 2**40).map(float)
               | st.floats(allow_infinity=False) | st.text(max_size=8))
json_any = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(string.ascii_letters + ".-_ ", max_size=4),
                                          inner, max_size=3), max_leaves=8)
json_objects = st.dictionaries(st.text(string.ascii_letters, max_size=4), json_any, max_size=3)
run_ids = st.uuids().map(str)


def set_value(target: struct_pb2.Value, value: Any) -> None:
    if value is None:
        target.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, list):
        target.list_value.SetInParent()
        for item in value:
            set_value(target.list_value.values.add(), item)
    else:
        target.struct_value.SetInParent()
        for key, item in value.items():
            set_value(target.struct_value.fields[key], item)


def with_metadata(draw: st.DrawFn, message: Any) -> None:
    if draw(st.booleans()):
        for key, item in draw(json_objects).items():
            set_value(message.metadata.fields[key], item)


@st.composite
def parts(draw: st.DrawFn, quoted: str) -> list[pb.Part]:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        part = pb.Part(media_type=draw(st.sampled_from(["", "text/plain", "image/png"])),
                       filename=draw(st.sampled_from(["", "a.txt"])))
        kind = draw(st.sampled_from(["text", "data", "raw", "url", "empty"]))
        if kind == "text":
            # Now and then a text that quotes the run's own id, as agents' answers do.
            part.text = draw(st.text(max_size=20) | st.just(f"Task {quoted} done."))
        elif kind == "data":
            set_value(part.data, draw(json_any))
        elif kind == "raw":
            part.raw = draw(st.binary(max_size=8))
        elif kind == "url":
            part.url = draw(st.sampled_from(["https://f.example/a", f"https://f.example/{quoted}"]))
        with_metadata(draw, part)
        out.append(part)
    return out


@st.composite
def tasks(draw: st.DrawFn) -> pb.Task:
    t = pb.Task(id=draw(run_ids), context_id=draw(run_ids))
    t.status.state = draw(st.sampled_from(pb.TaskState.values()))
    if draw(st.booleans()):
        t.status.timestamp.seconds = draw(st.integers(0, 2**33))
    if draw(st.booleans()):
        t.status.message.CopyFrom(pb.Message(message_id=draw(run_ids), task_id=t.id,
                                             role=pb.ROLE_AGENT, parts=draw(parts(t.id))))
    for _ in range(draw(st.integers(0, 3))):
        artifact = t.artifacts.add(artifact_id=draw(run_ids),
                                   name=draw(st.sampled_from(["", "result", "chart"])),
                                   description=draw(st.sampled_from(["", "The result"])),
                                   parts=draw(parts(t.id)))
        with_metadata(draw, artifact)
    for _ in range(draw(st.integers(0, 2))):
        t.history.add(message_id=draw(run_ids), role=pb.ROLE_USER,
                      parts=[pb.Part(text=draw(st.text(max_size=5)))])
    with_metadata(draw, t)
    return t


def rerun(task: pb.Task, stamp: int) -> pb.Task:
    """The same answer from another run: every id new (where strings quote it too), every
    timestamp and the history other."""
    again = pb.Task()
    again.CopyFrom(task)
    ids: dict[str, str] = {}
    _new_ids(again, ids)
    _requote(again, ids)
    again.status.timestamp.seconds = stamp
    again.ClearField("history")
    again.history.add(message_id="an-extra-turn", parts=[pb.Part(text="more")])
    return again


def _new_ids(message: ProtoMessage, ids: dict[str, str]) -> None:
    for field, value in message.ListFields():
        if field.message_type is not None and not field.message_type.full_name.startswith(
                "google.protobuf."):
            for sub in value if field.is_repeated else [value]:
                _new_ids(sub, ids)
        elif field.name in ID_FIELDS:
            ids.setdefault(value, str(uuid.uuid5(uuid.NAMESPACE_URL, value)))
            setattr(message, field.name, ids[value])


def _requote(message: ProtoMessage, ids: dict[str, str]) -> None:
    def requoted(text: str) -> str:
        for old, new in ids.items():
            text = text.replace(old, new)
        return text

    if isinstance(message, struct_pb2.Struct):
        for value in message.fields.values():
            _requote(value, ids)
        return
    if isinstance(message, struct_pb2.Value):
        kind = message.WhichOneof("kind")
        if kind == "string_value":
            message.string_value = requoted(message.string_value)
        elif kind == "struct_value":
            _requote(message.struct_value, ids)
        elif kind == "list_value":
            for item in message.list_value.values:
                _requote(item, ids)
        return
    for field, value in message.ListFields():
        if field.message_type is not None:
            for sub in value if field.is_repeated else [value]:
                _requote(sub, ids)
        elif field.type == field.TYPE_STRING and field.name not in ID_FIELDS \
                and not field.is_repeated:
            setattr(message, field.name, requoted(value))


def as_stream(task: pb.Task) -> list[pb.StreamResponse]:
    """The task as a stream: submitted, each artifact in one update, then its status."""
    first = pb.Task(id=task.id, context_id=task.context_id,
                    status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED))
    events = [pb.StreamResponse(task=first)]
    events += [pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id=task.id, artifact=artifact, last_chunk=True)) for artifact in task.artifacts]
    events.append(pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id=task.id, context_id=task.context_id, status=task.status)))
    if task.HasField("metadata"):
        events.append(pb.StreamResponse(task=task))  # a last snapshot brings the metadata
    return events


rules = st.builds(CompareRules, text=st.sampled_from(["exact", "normalized", "similarity"]),
                  similarity=st.floats(0.0, 1.0))


@SETTINGS
@given(tasks(), rules)
def test_an_answer_does_not_differ_from_itself(task: pb.Task, rule: CompareRules) -> None:
    assert compare(task, task, rule) == []
    assert compare(pb.SendMessageResponse(task=task), task, rule) == []
    assert compare(as_stream(task), as_stream(task), rule) == []


@SETTINGS
@given(tasks(), st.integers(0, 2**33), rules)
def test_ids_times_and_history_never_differ(task: pb.Task, stamp: int,
                                            rule: CompareRules) -> None:
    again = rerun(task, stamp)
    assert again.id != task.id
    assert compare(task, again, rule) == []
    assert compare(as_stream(task), as_stream(again), rule) == []
    # A stream says what its final task says.
    assert compare(as_stream(task), again, rule) == []


def _swapped(found: list[Difference]) -> list[Difference]:
    return [Difference(d.kind, d.path, d.candidate, d.primary) for d in found]


@SETTINGS
@given(tasks(), tasks(), rules)
def test_swapping_the_sides_swaps_each_difference(a: pb.Task, b: pb.Task,
                                                  rule: CompareRules) -> None:
    forward, backward = compare(a, b, rule), compare(b, a, rule)
    assert {(d.kind, d.path) for d in forward} == {(d.kind, d.path) for d in backward}
    assert backward == _swapped(forward)
    # Deterministic: the same answers built anew give the same list.
    assert compare(pb.Task.FromString(a.SerializeToString()),
                   pb.Task.FromString(b.SerializeToString()), rule) == forward
    assert all(len(d.primary) <= 200 and len(d.candidate) <= 200 for d in forward)


@SETTINGS
@given(tasks(), st.sampled_from([50, 300, 4000]))
def test_the_view_of_an_answer_is_bounded_json(task: pb.Task, limit: int) -> None:
    for outcome in (task, as_stream(task)):
        view = render(outcome, limit)
        json.dumps(view, allow_nan=False)
        assert json_size(view) <= limit
