"""Rules the gateway enforces on answers, whatever the backend did (spec MUSTs that
real backends miss, so that every client sees the behaviour the spec promises)."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators.p03.requests import strip_history


def enforce_answer_rules(request: ProtoMessage, answer: ProtoMessage | None) -> None:
    """In place, on a unary answer or one stream item:

    - ListTasks without `includeArtifacts: true` MUST omit artifacts (spec §3.1.4); the
      a2a-sdk 1.3.0 server sends them anyway;
    - `historyLength: 0` means no history (§3.7); a v0.3 backend cannot be told so, on
      any binding, so its Tasks (answers and stream items alike) are emptied here.
    """
    if answer is not None:
        strip_history(answer, request)
    if isinstance(answer, pb.ListTasksResponse) and isinstance(request, pb.ListTasksRequest) \
            and not request.include_artifacts:
        for task in answer.tasks:
            task.ClearField("artifacts")
