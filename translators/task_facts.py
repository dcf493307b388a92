"""What an answer or an event says about tasks, for the gateway's task index: each task's
id, context id, state (its v1.0 name) and status timestamp.

Two readers: one for canonical messages, and one for an answer passed through as the
backend sent it (same dialect on both sides), which reads only those fields of the bytes
and never fails: what it cannot read says nothing about tasks. The same two ways, the
ids an answer shows (answer_ids, canonical_ids): what migration mode binds owners by.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.dialects.grpc import wire_method
from translators.j03.objects import STATE_J03_TO_P10
from translators.versions import V03, as_version

_DECODER = json.JSONDecoder()
# Operations whose answer may carry a Task.
TASK_ANSWERS = frozenset({ops.SEND, ops.GET_TASK, ops.CANCEL, ops.LIST_TASKS})
_V10_STATES = frozenset(pb.TaskState.keys()) - {"TASK_STATE_UNSPECIFIED"}
# v0.3 proto and ProtoJSON spell one state differently; v0.3 JSON-RPC uses kebab names.
_STATE_ALIASES = {"TASK_STATE_CANCELLED": "TASK_STATE_CANCELED",
                  **{k: v for k, v in STATE_J03_TO_P10.items() if v != "TASK_STATE_UNSPECIFIED"}}


# One task as an answer shows it: (task id, context id, state as its v1.0 TaskState name,
# status timestamp in seconds since the epoch or None). A plain tuple, not a class: the
# index reads one from every answer, and building a tuple costs a tenth of an instance.
TaskFacts = tuple[str, str, str, float | None]


# Every spelling of a state, to its v1.0 name.
_STATE_NAMES = {**{name: name for name in _V10_STATES}, **_STATE_ALIASES}


def state_name(value: object) -> str | None:
    """A task state in any version's spelling, as its v1.0 name (None: not a state)."""
    return _STATE_NAMES.get(value) if isinstance(value, str) else None


_STATES: dict[type, dict[int, str]] = {}


def _states(status_type: type) -> dict[int, str]:
    """A TaskStatus class's state numbers by v1.0 name (each proto numbers its own)."""
    table = _STATES.get(status_type)
    if table is None:
        enum = status_type.DESCRIPTOR.fields_by_name["state"].enum_type  # type: ignore[attr-defined]
        table = {v.number: n for v in enum.values if (n := state_name(v.name)) is not None}
        _STATES[status_type] = table
    return table


def _proto_facts(task_id: str, context_id: str, status: Any) -> TaskFacts | None:
    """From the fields of a Task or status update of either proto (same field names)."""
    state = _states(type(status)).get(status.state)
    if not task_id or state is None:
        return None
    stamp = None
    if status.HasField("timestamp"):
        stamp = status.timestamp.seconds + status.timestamp.nanos / 1e9
    return task_id, context_id, state, stamp


def _task_facts(task: Any) -> TaskFacts | None:
    return _proto_facts(task.id, task.context_id, task.status)


# The StreamResponse payloads that show a task's state: facts_of reads no other.
STATEFUL_EVENTS = frozenset({"task", "status_update"})


def _one_task(task: Any) -> list[TaskFacts]:
    facts = _task_facts(task)
    return [] if facts is None else [facts]


def _send_answer(answer: Any) -> list[TaskFacts]:
    return _one_task(answer.task) if answer.HasField("task") else []


def _stream_event(event: Any) -> list[TaskFacts]:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return _one_task(event.task)
    if kind == "status_update":
        update = event.status_update
        facts = _proto_facts(update.task_id, update.context_id, update.status)
        return [] if facts is None else [facts]
    return []


def _task_list(answer: Any) -> list[TaskFacts]:
    return [facts for facts in map(_task_facts, answer.tasks) if facts is not None]


# By the message's class: one dict lookup per answer or event instead of a chain of
# isinstance checks (~70 ns for each that fails; a call's whole reading is ~0.8 µs).
_READERS: dict[type, Callable[[Any], list[TaskFacts]]] = {
    pb.Task: _one_task, pb.SendMessageResponse: _send_answer,
    pb.StreamResponse: _stream_event, pb.ListTasksResponse: _task_list}


def facts_of(message: ProtoMessage | None) -> list[TaskFacts]:
    """The tasks a canonical answer or stream event names with their state: a Task, the
    Task of a SendMessageResponse or StreamResponse, a status update, ListTasks' tasks.
    A list, not a generator: it is read whole, once per answer or stateful event."""
    reader = _READERS.get(type(message))
    return [] if reader is None else reader(message)


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # zone-less timestamps are UTC (§3.4)
    return parsed.timestamp()


def _json_task(task: object) -> TaskFacts | None:
    if not isinstance(task, dict):
        return None
    task_id, status = task.get("id"), task.get("status")
    if not isinstance(task_id, str) or not task_id or not isinstance(status, dict):
        return None
    state = status.get("state")
    state = _STATE_NAMES.get(state) if isinstance(state, str) else None
    if state is None:
        return None
    context_id, stamp = task.get("contextId"), status.get("timestamp")
    return (task_id, context_id if isinstance(context_id, str) else "", state,
            None if stamp is None else _timestamp(stamp))


def _json_facts(result: object) -> list[TaskFacts]:
    """The tasks of a JSON answer of any version: a Task, {"task": Task} (v1.0, v0.3
    ProtoJSON), {"tasks": [...]} (ListTasks)."""
    if not isinstance(result, dict):
        return []
    tasks = result.get("tasks")
    if isinstance(tasks, list):
        return [f for f in map(_json_task, tasks) if f is not None]
    task = result.get("task")
    facts = _json_task(task if isinstance(task, dict) else result)
    return [] if facts is None else [facts]


def document_facts(binding: str, version: str, op: str, document: Any) -> list[TaskFacts]:
    """The tasks in an answer of a backend of this dialect, as the gateway read it when it
    passed it through (JSON-RPC: the whole response; HTTP+JSON: the body; gRPC: the
    response message). Never raises."""
    if op not in TASK_ANSWERS or (op == ops.LIST_TASKS and version == V03):
        return []
    if binding == "GRPC":
        tasks: list[Any]
        if op == ops.SEND:
            tasks = [document.task] if document.WhichOneof("payload") == "task" else []
        elif op == ops.LIST_TASKS:
            tasks = list(document.tasks)
        else:
            tasks = [document]
        return [f for f in map(_task_facts, tasks) if f is not None]
    if binding == "JSONRPC":
        document = document.get("result") if isinstance(document, dict) else None
    return _json_facts(document)


def wire_facts(binding: str, version: str, op: str, body: bytes) -> list[TaskFacts]:
    """:func:`document_facts` of an answer's bytes (HTTP+JSON: the body; gRPC: the message
    bytes). Never raises: what does not parse names no task."""
    if op not in TASK_ANSWERS or (op == ops.LIST_TASKS and version == V03):
        return []
    document = wire_document(binding, version, op, body)
    return [] if document is None else document_facts(binding, version, op, document)


def wire_document(binding: str, version: str, op: str, body: bytes) -> Any:
    """What an answer's bytes read as (the JSON document, or the gRPC message), as the
    pass-through check reads it: None when they do not parse. Never raises."""
    try:
        if binding == "GRPC":
            return wire_method(ops.BY_NAME[op], as_version(version)).response.FromString(body)
        # Only the first JSON value is read, without json.loads' encoding sniffing.
        document, _ = _DECODER.raw_decode(body.decode("utf-8").lstrip())
    except (DecodeError, KeyError, ValueError, RecursionError):
        return None  # UnicodeDecodeError is a ValueError
    return document


def _json_ids(result: object, tasks_only: bool) -> tuple[str, str]:
    if not isinstance(result, dict):
        return "", ""
    inner = result.get("task") or result.get("message") or result
    if not isinstance(inner, dict):
        return "", ""
    is_task = "status" in inner and isinstance(inner.get("id"), str)
    task_id = inner.get("id") if is_task else None if tasks_only else inner.get("taskId")
    context_id = inner.get("contextId")
    return (task_id if isinstance(task_id, str) else "",
            context_id if isinstance(context_id, str) else "")


def answer_ids(binding: str, version: str, op: str, body: bytes,
               document: Any, tasks_only: bool = False) -> tuple[str, str]:
    """The (task id, context id) a SendMessage answer of this dialect shows, as it was
    passed through (``document``: what the gateway read of it, or None: read ``body``);
    a message answer shows its conversation and, maybe, a task (not with ``tasks_only``:
    a task id then means the answer is the task). Never raises: what does not parse
    shows nothing ("", "")."""
    if op != ops.SEND:
        return "", ""
    if document is None:
        document = wire_document(binding, version, op, body)
        if document is None:
            return "", ""
    if binding == "GRPC":
        kind = document.WhichOneof("payload")
        if kind == "task":
            return str(document.task.id), str(document.task.context_id)
        if kind in ("message", "msg"):
            message = getattr(document, kind)
            return "" if tasks_only else str(message.task_id), str(message.context_id)
        return "", ""
    if binding == "JSONRPC":
        document = document.get("result") if isinstance(document, dict) else None
    return _json_ids(document, tasks_only)


# Built once (a union written inside isinstance() is made again on every call).
_WRAPPERS = (pb.SendMessageResponse, pb.StreamResponse)
_NAMING = (pb.Message, pb.TaskStatusUpdateEvent, pb.TaskArtifactUpdateEvent)  # a task id


def canonical_ids(answer: ProtoMessage | None, tasks_only: bool = False) -> tuple[str, str]:
    """The (task id, context id) a canonical answer or stream event shows ("" for what it
    lacks): :func:`answer_ids` for what was decoded. With ``tasks_only``, a task id only
    where the index records that task (a Task, or an event of STATEFUL_EVENTS), not one a
    message or an artifact chunk names."""
    item: Any = answer
    recorded = isinstance(item, pb.Task)  # bare: what the index reads of an answer
    if isinstance(item, _WRAPPERS):
        kind = item.WhichOneof("payload")
        recorded = kind in STATEFUL_EVENTS
        item = getattr(item, kind) if kind else None
    if isinstance(item, pb.Task):
        return str(item.id), str(item.context_id)
    if isinstance(item, _NAMING):
        return ("" if tasks_only and not recorded else str(item.task_id),
                str(item.context_id))
    return "", ""
