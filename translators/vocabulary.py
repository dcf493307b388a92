"""What task states mean, for every dialect and for the gateway: which end a task, and
which end a stream. One home, so that the stream's `final` flag, the push relay's spent
seal, the task list's "unfinished" filter and the v0.3 stream repair agree.

States are named here by their v1.0 TaskState names; v0.3 spells five of them otherwise
(kebab case in JSON-RPC, reference §3.1) but numbers them the same, so the number sets
serve every version's proto. Sets of numbers, not names: a backend may send a state no
version names (TaskState.Name would raise), which then ends nothing.
"""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb

# A plain JSON object, as every dict-level translator and the gateway hold one.
JSON = dict[str, Any]

# The task is over: nothing can change it any more (spec §4.1.3).
TERMINAL_STATES = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
# The task waits for its client: a v1.0 server closes the stream here too (spec §11.7), and
# a v0.3 agent's last event is one of these (py@v0.3.26 event_consumer).
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})

# py's convention for a v1.0 data part that is not an object: v0.3 data parts are objects,
# so the value is wrapped in {"value": ...} and this metadata key says so (reference §3.2).
DATA_COMPAT_FLAG = "data_part_compat"
# The media type a text or data part implies. v0.3 puts mediaType on file parts only, so a
# v1.0 text or data part that names this one loses nothing on its way to v0.3.
IMPLIED_MEDIA_TYPE = {"text": "text/plain", "data": "application/json"}

TERMINAL = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES)
_ENDS_STREAM = frozenset(pb.TaskState.Value(s) for s in TERMINAL_STATES | INTERRUPTED_STATES)


def ends_stream(state: int) -> bool:
    """A terminal or interrupted task state: the stream that reports it is over."""
    return state in _ENDS_STREAM


def ends_v03_stream(item: pb.StreamResponse) -> bool:
    """The event a v0.3 client reads as its stream's last, `final: true` (reference §3.6):
    a status update whose state ends the stream. A Task, a message or an artifact update
    never carries the flag."""
    return item.HasField("status_update") and item.status_update.status.state in _ENDS_STREAM


def ends_task(event: pb.StreamResponse) -> bool:
    """An event that shows its task in a terminal state (a Task or a status update)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task.status.state in TERMINAL
    return kind == "status_update" and event.status_update.status.state in TERMINAL
