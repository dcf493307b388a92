"""Rules the gateway enforces on answers, whatever the backend did (spec MUSTs that
real backends miss, so that every client sees the behaviour the spec promises). One
place, applied to every backend answer and every stream event (dialects/base.py)."""

from __future__ import annotations

from typing import TypeVar

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

M = TypeVar("M", bound=ProtoMessage)


def wants_no_history(request: ProtoMessage) -> bool:
    """Whether a v1.0 request asked for `historyLength: 0`, which v0.3 cannot express
    (there 0 means all, reference §3.7)."""
    if isinstance(request, pb.SendMessageRequest):
        conf = request.configuration
        return conf.HasField("history_length") and conf.history_length == 0
    if isinstance(request, pb.GetTaskRequest):
        return request.HasField("history_length") and request.history_length == 0
    return False


def strip_history(answer: M, request: ProtoMessage) -> M:
    """`historyLength: 0` means no history (§3.7), in place."""
    if not wants_no_history(request):
        return answer
    if isinstance(answer, pb.Task):
        answer.ClearField("history")
    elif isinstance(answer, pb.SendMessageResponse | pb.StreamResponse) \
            and answer.WhichOneof("payload") == "task":
        answer.task.ClearField("history")
    return answer


def enforce_answer_rules(request: ProtoMessage, answer: ProtoMessage | None) -> None:
    """In place, on a unary answer or one stream item:

    - ListTasks without `includeArtifacts: true` MUST omit artifacts (spec §3.1.4); the
      a2a-sdk 1.3.0 server sends them anyway;
    - `historyLength: 0` means no history (§3.7); a v0.3 backend cannot be told so, on
      any binding, so its Tasks (answers and stream items alike) are emptied here.
    """
    if answer is None:
        return
    strip_history(answer, request)
    # type() is, not isinstance(): against a message class not its own, isinstance goes
    # through protobuf's metaclass (~3 times the cost), and nearly every answer is no list.
    if type(answer) is pb.ListTasksResponse and type(request) is pb.ListTasksRequest \
            and not request.include_artifacts:
        for task in answer.tasks:
            task.ClearField("artifacts")
