"""What a client's request must hold before any backend sees it (spec@v1.0.1 §3.1, §3.4;
reference §3.3, §3.7), checked on the canonical request, so every dialect gets the same
rule and the same InvalidParams.

A backend of the other version cannot be trusted to refuse these itself: a v1.0 message
without a role would otherwise reach a v0.3 agent with a role somebody made up, and a
negative history length would vanish on the v0.3 bindings that read it as "all".
"""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import invalid_params


def check_message(msg: pb.Message, path: str) -> None:
    """A message a client sends: an id, a role, and at least one part with content."""
    if not msg.message_id:
        raise invalid_params(f"{path}.messageId is required", field=f"{path}.messageId")
    if msg.role == pb.ROLE_UNSPECIFIED:
        raise invalid_params(f"{path}.role is required (ROLE_USER or ROLE_AGENT)",
                             field=f"{path}.role")
    if not msg.parts:
        raise invalid_params(f"{path}.parts must hold at least one part",
                             field=f"{path}.parts")
    for i, part in enumerate(msg.parts):
        if part.WhichOneof("content") is None:
            raise invalid_params(f"{path}.parts[{i}] has no content (text, raw, url or data)",
                                 field=f"{path}.parts[{i}]")


def check_history_length(value: int, field: str) -> None:
    if value < 0:
        raise invalid_params(f"{field} must not be negative", field=field)


def check_request(op: str, request: ProtoMessage) -> None:
    """InvalidParams for a request no backend should see."""
    if isinstance(request, pb.SendMessageRequest):
        if not request.HasField("message"):
            raise invalid_params("message is required", field="message")
        check_message(request.message, "message")
        conf = request.configuration
        if conf.HasField("history_length"):
            check_history_length(conf.history_length, "configuration.historyLength")
    elif isinstance(request, pb.GetTaskRequest | pb.ListTasksRequest) \
            and request.HasField("history_length"):
        check_history_length(request.history_length, "historyLength")
    named = _NAMES_TASK.get(op)
    if named is not None and not getattr(request, named[0]):
        raise invalid_params(f"{named[1]} is required", field=named[1])


# Operations on one task: the field that names it (proto name, JSON name).
_NAMES_TASK = {ops.GET_TASK: ("id", "id"), ops.CANCEL: ("id", "id"),
               ops.SUBSCRIBE: ("id", "id"), ops.PUSH_CREATE: ("task_id", "taskId"),
               ops.PUSH_GET: ("task_id", "taskId"), ops.PUSH_LIST: ("task_id", "taskId"),
               ops.PUSH_DELETE: ("task_id", "taskId")}
