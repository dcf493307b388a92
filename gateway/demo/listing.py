"""ListTasks for the v1.0 demo agent (v0.3 has no such method, reference §5).

The v1.0 semantics, over the few tasks a demo agent holds: filters `contextId`, `status`,
`statusTimestampAfter` (inclusive), newest status first, `totalSize` counting every
match, page tokens as the gateway's own task index makes them (gateway.state.base), each
task as GetTask answers it (so `historyLength` means what it means there), artifacts
only with `includeArtifacts: true`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from a2a.types import a2a_pb2 as pb

from gateway.demo.engine import TaskRecord
from gateway.state.base import (
    MAX_PAGE_SIZE,
    BadPageToken,
    TaskQuery,
    clamp_page_size,
    decode_token,
    encode_token,
)
from gateway.state.base import TaskRecord as IndexRecord
from translators.answers import enforce_answer_rules
from translators.errors import invalid_params

GetTask = Callable[[pb.GetTaskRequest], Awaitable[pb.Task]]


def _query(request: pb.ListTasksRequest) -> TaskQuery:
    if request.HasField("page_size") and not 1 <= request.page_size <= MAX_PAGE_SIZE:
        raise invalid_params(f"pageSize must be between 1 and {MAX_PAGE_SIZE}",
                             field="pageSize")
    after = None
    if request.HasField("status_timestamp_after"):
        after = request.status_timestamp_after.ToNanoseconds() / 1e9
    states = None
    if request.status != pb.TASK_STATE_UNSPECIFIED:
        states = {pb.TaskState.Name(request.status)}
    return TaskQuery("", context_id=request.context_id or None, states=states,
                     status_after=after)


def _index_record(task: pb.Task) -> IndexRecord:
    updated = task.status.timestamp.ToNanoseconds() / 1e9
    return IndexRecord("", task.id, task.context_id, pb.TaskState.Name(task.status.state),
                       created_at=updated, updated_at=updated)


async def list_tasks(records: Sequence[TaskRecord], request: pb.ListTasksRequest,
                     get_task: GetTask) -> pb.ListTasksResponse:
    query = _query(request)
    size = clamp_page_size(request.page_size if request.HasField("page_size") else None)
    try:
        cursor = decode_token(request.page_token)
    except BadPageToken:
        raise invalid_params(f"page token {request.page_token[:40]!r} was not made by this "
                             "agent", field="pageToken") from None
    matches: list[tuple[IndexRecord, pb.Task]] = []
    for record in records:
        get = pb.GetTaskRequest(id=record.id)
        if request.HasField("history_length"):
            get.history_length = request.history_length
        task = await get_task(get)
        index = _index_record(task)
        if query.matches(index):
            matches.append((index, task))
    matches.sort(key=lambda match: (match[0].updated_at, match[0].task_id), reverse=True)
    rest = matches if cursor is None else \
        [m for m in matches if (m[0].updated_at, m[0].task_id) < cursor]
    page = rest[:size]
    last = page[-1][0] if page and len(rest) > size else None
    answer = pb.ListTasksResponse(
        tasks=[task for _, task in page], page_size=size, total_size=len(matches),
        next_page_token=encode_token((last.updated_at, last.task_id)) if last else "")
    enforce_answer_rules(request, answer)
    return answer
