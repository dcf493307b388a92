"""ListTasks answered from the task index (README "State"): for a v0.3 backend, which has
no ListTasks, and wherever a call is confined to its principal's tasks (a backend cannot
filter by a principal it never sees).

The v1.0 semantics: filters `contextId`, `status`, `statusTimestampAfter` (inclusive),
newest status first, opaque page tokens, `totalSize` counting every match. The index knows
ids and states, not contents, and a state it holds may be old: first the unfinished tasks
in the call's scope are refreshed with GetTask (bounded: `refresh_limit`, a few at once,
within the call's deadline) and what moved is recorded; then the page is read, and each
task on it comes from the backend's GetTask answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.state import (
    BadPageToken,
    StoreError,
    TaskPage,
    TaskQuery,
    TaskRecord,
    store_unavailable,
)
from gateway.state.base import MAX_PAGE_SIZE, clamp_page_size
from gateway.tasks.index import REFRESH_BINDING, TaskIndex
from translators import operations as ops
from translators.answers import enforce_answer_rules
from translators.errors import A2AError, a2a_error, invalid_params
from translators.task_facts import TaskFacts, facts_of
from translators.versions import V10
from translators.vocabulary import TERMINAL_STATES

Unary = Callable[[Call], Awaitable[object]]
UNFINISHED = frozenset(pb.TaskState.Name(s) for s in pb.TaskState.values()
                       if s != pb.TASK_STATE_UNSPECIFIED) - TERMINAL_STATES


def query_of(request: pb.ListTasksRequest, tenant: str, owner: str | None) -> TaskQuery:
    if request.HasField("page_size") and not 1 <= request.page_size <= MAX_PAGE_SIZE:
        raise invalid_params(f"pageSize must be between 1 and {MAX_PAGE_SIZE}",
                             field="pageSize")
    after = None
    if request.HasField("status_timestamp_after"):
        stamp = request.status_timestamp_after
        after = stamp.seconds + stamp.nanos / 1e9
    states = None
    if request.status != pb.TASK_STATE_UNSPECIFIED:
        states = {pb.TaskState.Name(request.status)}
    return TaskQuery(tenant, owner=owner, context_id=request.context_id or None,
                     states=states, status_after=after)


def _moved(before: Sequence[TaskRecord], after: Sequence[TaskRecord]) -> list[TaskRecord]:
    return [new for old, new in zip(before, after, strict=True) if new != old]


def skeleton(record: TaskRecord) -> pb.Task:
    """What the index alone says of a task (the backend no longer knows it)."""
    task = pb.Task(id=record.task_id, context_id=record.context_id)
    task.status.state = pb.TaskState.Value(record.state)
    task.status.timestamp.FromNanoseconds(round(record.updated_at * 1e9))
    return task


def refreshed(record: TaskRecord, facts: TaskFacts, now: float) -> TaskRecord:
    """The record after a GetTask, which says how the task is now: never older than what
    was recorded (that may have been the gateway's own clock, for a status that carried no
    timestamp), and not newer for reading an unchanged task that says no time."""
    _, context_id, state, stamp = facts
    if stamp is None:
        stamp = record.updated_at if state == record.state else now
    return replace(record, context_id=context_id or record.context_id,
                   state=state, updated_at=max(stamp, record.updated_at))


class TaskLister:
    """ListTasks from the index for one gateway; ``unary`` runs the GetTask calls through
    the gateway's pipeline (routing, limits, fallback)."""

    def __init__(self, index: TaskIndex, unary: Unary) -> None:
        self.index = index
        self._unary = unary

    async def list_tasks(self, call: Call) -> pb.ListTasksResponse:
        recorder = self.index.recorder
        if recorder is None:
            raise a2a_error("UnsupportedOperationError", "ListTasks toward this backend is "
                            "served from the task index, which is off (state.tasks.record)")
        request = call.request
        assert isinstance(request, pb.ListTasksRequest)
        query = query_of(request, call.ctx.tenant or "", self.index.owner_scope(call))
        size = clamp_page_size(request.page_size if request.HasField("page_size") else None)
        tasks: dict[str, pb.Task | None] = {}
        await self._flush()  # what this gateway has seen so far, written
        # First what may have moved since it was recorded: the unfinished tasks in the
        # call's scope (its filters but state and time), most recently updated first.
        limit = self.index.settings.refresh_limit
        if limit:
            scope = replace(query, states=UNFINISHED, status_after=None)
            unfinished = (await self._page(scope, limit, "")).records
            moved = _moved(unfinished, await self._fetch(call, unfinished, tasks))
            if moved:
                recorder.add_all(moved)
                await self._flush()  # the page below is read with them where they are
        page = await self._page(query, size, request.page_token)
        todo = [r for r in page.records if r.task_id not in tasks]
        moved = _moved(todo, await self._fetch(call, todo, tasks))
        recorder.add_all(moved)  # past the refresh limit: listed only if still matching
        current = {r.task_id: r for r in moved}
        answer = pb.ListTasksResponse(next_page_token=page.next_page_token, page_size=size,
                                      total_size=page.total_size)
        for record in page.records:
            if query.matches(current.get(record.task_id, record)):
                task = tasks.get(record.task_id)
                answer.tasks.append(task if task is not None else skeleton(record))
        enforce_answer_rules(request, answer)
        return answer

    async def _flush(self) -> None:
        await self.index.flush()

    async def _page(self, query: TaskQuery, size: int, token: str) -> TaskPage:
        assert self.index.store is not None
        try:
            return await self.index.store.list_tasks(query, size, token)
        except BadPageToken as exc:
            raise invalid_params(str(exc), field="pageToken") from None
        except StoreError as exc:
            raise store_unavailable("the task index cannot be read now", exc) from exc

    async def _fetch(self, call: Call, records: Sequence[TaskRecord],
                     tasks: dict[str, pb.Task | None]) -> list[TaskRecord]:
        """GetTask for each record, a few at once, into ``tasks``; the records as the
        answers refresh them (a task the backend no longer knows keeps its record)."""
        gate = asyncio.Semaphore(self.index.settings.refresh_concurrency)
        request = call.request
        assert isinstance(request, pb.ListTasksRequest)
        now = time.time()

        async def one(record: TaskRecord) -> TaskRecord:
            get = pb.GetTaskRequest(id=record.task_id)
            if request.HasField("history_length"):
                get.history_length = request.history_length
            async with gate:
                try:
                    result = await self._unary(Call(ops.BY_NAME[ops.GET_TASK], get,
                                                    _refresh_context(call.ctx)))
                except A2AError as err:
                    if err.kind.name != "TaskNotFoundError":
                        raise
                    tasks[record.task_id] = None
                    return record
            if not isinstance(result, pb.Task):
                raise a2a_error("InvalidAgentResponseError", "GetTask did not answer a Task")
            tasks[record.task_id] = result
            facts = facts_of(result)
            return refreshed(record, facts[0], now) if facts else record

        return list(await asyncio.gather(*(one(r) for r in records)))


def _refresh_context(ctx: CallContext) -> CallContext:
    """A GetTask of a listing: the listing's tenant, headers (as admitted), deadline and
    request id; the gateway's own call (the listing's caller was admitted already, and
    its principal's scope applied)."""
    facts = ClientFacts(REFRESH_BINDING, ctx.facts.request_id, ctx.backend_headers,
                        ctx.facts.extensions, ctx.facts.deadline, internal=True)
    return CallContext(facts, V10, tenant=ctx.tenant)
