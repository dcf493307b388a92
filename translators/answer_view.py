"""What an agent's answer says, with what differs from run to run left out: the view that
migration mode compares (translators/answer_diff.py), and the JSON view of an answer that
its report shows.

An outcome is a unary answer (a canonical message), an error, or a stream's events in
order. Its view keeps the answer's shape, the task's last state, the status message, the
artifacts and the metadata; it never keeps ids, timestamps or the history (the history
echoes the request and the run's own messages). Strings that quote the outcome's own ids
(a file URL under the task id, say) have those ids masked, so that two runs compare alike.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from translators.errors import A2AError
from translators.id_mask import MIN_MASKED_ID, Masker, masker
from translators.vocabulary import IMPLIED_MEDIA_TYPE

# A unary answer, an error, or a stream's events in order.
Outcome: TypeAlias = ProtoMessage | A2AError | Sequence[pb.StreamResponse]

# Fields that name a run's objects. Their values are masked where strings quote them.
_ID_FIELDS = frozenset({"id", "context_id", "task_id", "message_id", "artifact_id",
                        "reference_task_ids"})
# The fields of a run's own values, left out of the view of an answer that has no view of
# its own (those of operations other than the message ones): fields of these names, and
# "id" in the messages whose id is the run's.
_RUN_FIELDS = frozenset({"context_id", "task_id", "message_id", "artifact_id",
                         "reference_task_ids", "timestamp", "next_page_token", "history"})
_RUN_OBJECTS = frozenset({"lf.a2a.v1.Task", "lf.a2a.v1.TaskPushNotificationConfig"})
_STRUCTS = ("google.protobuf.Struct", "google.protobuf.Value")


@dataclass(frozen=True, slots=True)
class PartView:
    kind: str  # text | data | raw | url | empty
    media_type: str  # casefolded; a text or data part's implied one when it names none
    value: Any  # text: str; data: JSON; raw: "N bytes sha256:…"; url: str; empty: None
    filename: str
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MessageView:
    parts: tuple[PartView, ...]
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ArtifactView:
    name: str
    description: str
    parts: tuple[PartView, ...]
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnswerView:
    """One outcome, as compared. ``shape`` says which other fields speak:

    - "task": state, status (None: no status message), artifacts, metadata;
    - "message": message (a Message answer, or a stream's only answer), with its metadata;
    - "error": error (the error kind's name);
    - "none": a stream that ended without an answer;
    - any other message's full name: other (its JSON without per-run fields).
    """

    shape: str
    state: str = ""
    status: MessageView | None = None
    artifacts: tuple[ArtifactView, ...] = ()
    metadata: dict[str, Any] | None = None
    message: MessageView | None = None
    error: str = ""
    other: Any = None
    states: tuple[str, ...] | None = None  # a stream's states, repeats collapsed

    @property
    def label(self) -> str:
        """The shape, as a report names it."""
        if self.shape == "error":
            return f"error {self.error}"
        return "no answer" if self.shape == "none" else self.shape



def view_of(outcome: Outcome) -> AnswerView:
    if isinstance(outcome, A2AError):
        return AnswerView("error", error=outcome.kind.name)
    if isinstance(outcome, ProtoMessage):
        return _answer_view(outcome, masker(_ids_in([outcome])))
    events = list(outcome)
    answer, states = assemble_stream(events)
    view = _answer_view(answer, masker(_ids_in(events))) if answer is not None \
        else AnswerView("none")
    return replace(view, states=states)


def _answer_view(answer: ProtoMessage, mask: Masker) -> AnswerView:
    if isinstance(answer, pb.SendMessageResponse):
        inner = answer.WhichOneof("payload")
        return _answer_view(getattr(answer, inner), mask) if inner else AnswerView("none")
    if isinstance(answer, pb.StreamResponse):
        single, _ = assemble_stream([answer])
        return AnswerView("none") if single is None else _answer_view(single, mask)
    if isinstance(answer, pb.Task):
        status = answer.status
        return AnswerView(
            "task", state=_state_name(status.state),
            status=_message_view(status.message, mask) if status.HasField("message") else None,
            artifacts=tuple(_artifact_view(a, mask) for a in answer.artifacts),
            metadata=_struct(answer.metadata, mask))
    if isinstance(answer, pb.Message):
        return AnswerView("message", message=_message_view(answer, mask))
    return AnswerView(answer.DESCRIPTOR.full_name,
                      other=_masked(_to_dict(_without_run_fields(answer)), mask))


_STATE_NUMBERS = frozenset(pb.TaskState.values())


def _state_name(state: int) -> str:
    # A backend may send a number no version names: shown as the number.
    return pb.TaskState.Name(state) if state in _STATE_NUMBERS else str(state)


def _message_view(message: pb.Message, mask: Masker) -> MessageView:
    return MessageView(tuple(_part_view(p, mask) for p in message.parts),
                       _struct(message.metadata, mask))


def _artifact_view(artifact: pb.Artifact, mask: Masker) -> ArtifactView:
    return ArtifactView(mask(artifact.name), mask(artifact.description),
                        tuple(_part_view(p, mask) for p in artifact.parts),
                        _struct(artifact.metadata, mask))


def _part_view(part: pb.Part, mask: Masker) -> PartView:
    kind = part.WhichOneof("content") or "empty"
    value: Any = None
    if kind == "text":
        value = mask(part.text)
    elif kind == "data":
        value = json_value(part.data, mask)
    elif kind == "raw":
        value = f"{len(part.raw)} bytes sha256:{hashlib.sha256(part.raw).hexdigest()[:16]}"
    elif kind == "url":
        value = mask(part.url)
    media = part.media_type.strip().casefold() or IMPLIED_MEDIA_TYPE.get(kind, "")
    return PartView(kind, media, value, mask(part.filename), _struct(part.metadata, mask))


def json_value(value: struct_pb2.Value, mask: Masker = str) -> Any:
    """A google.protobuf.Value as plain JSON (numbers are floats, as the Value holds them)."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _struct(value.struct_value, mask)
    if kind == "list_value":
        return [json_value(v, mask) for v in value.list_value.values]
    if kind == "string_value":
        return mask(value.string_value)
    if kind in ("number_value", "bool_value"):
        return getattr(value, kind)
    return None  # null_value, or no kind set


def _struct(struct: struct_pb2.Struct, mask: Masker) -> dict[str, Any]:
    # Keys sorted: a Struct is a map, whose order is not the same from one copy to another.
    fields = struct.fields
    return {key: json_value(fields[key], mask) for key in sorted(fields)}


def assemble_stream(events: Iterable[pb.StreamResponse]
                    ) -> tuple[pb.Task | pb.Message | None, tuple[str, ...]]:
    """The answer a stream's events build, and the states they showed in order (repeats
    collapsed). A Task event replaces the task so far; a status update sets its status;
    an artifact update adds an artifact, replaces the one of the same id, or (append)
    adds its parts to it. A Message is the answer only of a stream without a task."""
    task: pb.Task | None = None
    message: pb.Message | None = None
    states: list[str] = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "message":
            message = event.message if message is None else message
            continue
        if kind is None:
            continue
        if task is None:
            task = pb.Task()
        if kind == "task":
            task.CopyFrom(event.task)
            _note_state(states, task.status.state)
        elif kind == "status_update":
            task.status.CopyFrom(event.status_update.status)
            _note_state(states, task.status.state)
        else:
            _apply_artifact(task, event.artifact_update)
    return (task if task is not None else message), tuple(states)


def _note_state(states: list[str], state: int) -> None:
    name = _state_name(state)
    if not states or states[-1] != name:
        states.append(name)


def _apply_artifact(task: pb.Task, update: pb.TaskArtifactUpdateEvent) -> None:
    new = update.artifact
    # Ids are the same within one stream; an artifact without one is known by its name.
    same = [a for a in task.artifacts if (a.artifact_id == new.artifact_id if new.artifact_id
                                          else a.name == new.name)]
    if not same:
        task.artifacts.add().CopyFrom(new)
    elif not update.append:
        same[-1].CopyFrom(new)
    else:
        _append_parts(same[-1], new.parts)


def _append_parts(artifact: pb.Artifact, parts: Sequence[pb.Part]) -> None:
    """Chunks of one text are one text: where an appended plain text part follows a plain
    text part of the same media type, the text is joined, so that agents that chunk a
    text differently give the same artifact."""
    last = artifact.parts[-1] if artifact.parts else None
    first, rest = (parts[0], parts[1:]) if parts else (None, [])
    if last is not None and first is not None and _plain_text(last) and _plain_text(first) \
            and last.media_type == first.media_type:
        last.text += first.text
    else:
        rest = parts
    artifact.parts.extend(rest)


def _plain_text(part: pb.Part) -> bool:
    return part.WhichOneof("content") == "text" and not part.filename \
        and not part.HasField("metadata")


def _ids_in(messages: Iterable[ProtoMessage]) -> set[str]:
    found: set[str] = set()
    stack = list(messages)
    while stack:
        msg = stack.pop()
        if msg.DESCRIPTOR.full_name in _STRUCTS:
            continue  # an agent's own data: its "id" keys are no fields of A2A's
        for field, value in msg.ListFields():
            if field.message_type is not None:
                stack.extend(_sub_messages(field, value))
            elif field.name in _ID_FIELDS:
                found.update(value if field.is_repeated else [value])
    return {i for i in found if len(i) >= MIN_MASKED_ID}


def _without_run_fields(message: ProtoMessage) -> ProtoMessage:
    kept = type(message)()
    kept.CopyFrom(message)
    stack = [kept]
    while stack:
        msg = stack.pop()
        if msg.DESCRIPTOR.full_name in _STRUCTS:
            continue
        for field, value in msg.ListFields():
            if field.name in _RUN_FIELDS or (field.name == "id"
                                             and msg.DESCRIPTOR.full_name in _RUN_OBJECTS):
                msg.ClearField(field.name)
            elif field.message_type is not None:
                stack.extend(_sub_messages(field, value))
    return kept


def _masked(value: Any, mask: Masker) -> Any:
    if isinstance(value, dict):
        return {k: _masked(value[k], mask) for k in sorted(value)}  # maps have no order
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    return mask(value) if isinstance(value, str) else value


def _to_dict(message: ProtoMessage) -> Any:
    try:
        return json_format.MessageToDict(message, preserving_proto_field_name=False)
    except (json_format.Error, ValueError):
        # NaN or infinity in a Value has no ProtoJSON (gRPC carries them): shown as text.
        finite = type(message)()
        finite.CopyFrom(message)
        _spell_non_finite(finite)
        return json_format.MessageToDict(finite, preserving_proto_field_name=False)


def _spell_non_finite(message: ProtoMessage) -> None:
    if isinstance(message, struct_pb2.Value) and message.WhichOneof("kind") == "number_value" \
            and not math.isfinite(message.number_value):
        message.string_value = str(message.number_value)
        return
    for field, value in message.ListFields():
        if field.message_type is not None:
            for sub in _sub_messages(field, value):
                _spell_non_finite(sub)


def _sub_messages(field: FieldDescriptor, value: Any) -> list[ProtoMessage]:
    """The messages a message-typed field holds (a map's values, where they are some)."""
    if field.message_type.GetOptions().map_entry:
        return [v for v in value.values() if isinstance(v, ProtoMessage)]
    return list(value) if field.is_repeated else [value]


def render(outcome: Outcome, limit: int = 4000) -> Any:
    """A JSON view of an outcome for a report, about `limit` characters of JSON at most
    (long strings and lists cut, marked with …). Ids and timestamps are kept: the report
    shows what the agent said."""
    full: Any
    if isinstance(outcome, A2AError):
        full = {"error": {"kind": outcome.kind.name, "message": outcome.message}}
    elif isinstance(outcome, ProtoMessage):
        full = _to_dict(outcome)
    else:
        full = {"events": [_to_dict(event) for event in outcome]}
    return bounded(full, limit)


# (longest string, most items of a list or object) tried in turn until the view fits.
_CUTS = ((2000, 100), (500, 30), (120, 10), (40, 4), (12, 2), (4, 1))


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def bounded(value: Any, limit: int) -> Any:
    if json_size(value) <= limit:
        return value
    for text_cap, items_cap in _CUTS:
        cut = _cut(value, text_cap, items_cap)
        if json_size(cut) <= limit:
            return cut
    # Too many keys or too deep to cut to size: the start of its text, marked.
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    keep = max(limit - 20, 0)
    while json_size({"truncated": text[:keep] + "…"}) > limit and keep:
        keep = keep * 3 // 4
    return {"truncated": text[:keep] + "…"}


def _cut(value: Any, text_cap: int, items_cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= text_cap else value[:text_cap] + "…"
    if isinstance(value, list):
        kept = [_cut(v, text_cap, items_cap) for v in value[:items_cap]]
        return [*kept, f"… {len(value) - items_cap} more"] if len(value) > items_cap else kept
    if isinstance(value, dict):
        out = {k: _cut(v, text_cap, items_cap) for k, v in list(value.items())[:items_cap]}
        if len(value) > items_cap:
            out["…"] = f"{len(value) - items_cap} more"
        return out
    return value
