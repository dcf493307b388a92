"""What a v0.3 backend's stream lacks that a v1.0 stream promises (reference §3.6, §3.8),
added on the canonical stream whatever the client speaks:

- subscribe begins with the Task (a v0.3 backend sends only what happens next);
- a stream ends with the status that ends or interrupts the task (a v0.3 backend may
  close before sending it: a2a-sdk 0.3.26's gRPC TaskSubscription usually does);
- subscribing to a task that has already ended is UnsupportedOperationError for a v1.0
  client (v0.3 agents answer InvalidParams), and to an unknown task TaskNotFoundError
  (whatever the v0.3 agent's stream did).

Each repair is a stream filter: canonical events in, canonical events out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.egress.base import Backend
from gateway.streams import TERMINAL, ends_stream
from translators import operations as ops
from translators.errors import A2AError, a2a_error
from translators.versions import V03, V10

Events = AsyncIterator[pb.StreamResponse]

# How long a subscribe to a v0.3 backend waits for the backend's own first event before
# the gateway fetches the Task to send first (v0.3 backends send only what happens next).
TASK_FIRST_GRACE_SECONDS = 0.25


def v03_repaired(backend: Backend, call: Call, source: Events) -> Events:
    """``source`` with the repairs a v0.3 backend needs (none for a v1.0 backend)."""
    if backend.config.version != V03:
        return source
    if call.op.name == ops.SUBSCRIBE:
        source = task_first(backend, call, source)
    return settled_end(backend, call, source)


async def current_task(backend: Backend, call: Call, task_id: str) -> pb.Task:
    get = Call(ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id=task_id), call.ctx)
    task = await backend.unary(get)
    if not isinstance(task, pb.Task):
        raise a2a_error("InvalidAgentResponseError", "the backend returned no task")
    return task


async def settled_end(backend: Backend, call: Call, source: Events) -> Events:
    """A v1.0 stream ends with the status that ends the task (or interrupts it). When a
    v0.3 backend closes first, the gateway reads the task, and if it has ended, sends its
    status."""
    task_id = context_id = ""
    ended = False
    try:
        async for item in source:
            kind = item.WhichOneof("payload")
            if kind == "task":
                task_id, context_id = item.task.id, item.task.context_id
                ended = ends_stream(item.task.status.state)
            elif kind == "status_update":
                task_id, context_id = item.status_update.task_id, item.status_update.context_id
                ended = ends_stream(item.status_update.status.state)
            elif kind == "artifact_update":
                task_id = item.artifact_update.task_id
                context_id = item.artifact_update.context_id
            else:
                ended = True  # a Message: no task
            yield item
    finally:
        await source.aclose()  # type: ignore[attr-defined]
    if ended or not task_id:
        return
    try:
        task = await current_task(backend, call, task_id)
    except A2AError:
        return  # what the backend sent has been delivered; its close stands
    if ends_stream(task.status.state):
        yield pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id=task_id, context_id=context_id or task.context_id, status=task.status))


async def _failed_subscribe(backend: Backend, call: Call, err: A2AError | None) -> A2AError | None:
    """Why a subscribe to a v0.3 backend ended before its first event (``err``, or None
    for a stream closed without one), read from the task itself: a2a-sdk 0.3.26's REST
    agent answers an unknown task with an event stream that breaks off, and v0.3 agents
    refuse an ended task with InvalidParams where v1.0 says UnsupportedOperationError."""
    try:
        task = await current_task(backend, call, call.request.id)
    except A2AError as lookup:
        return lookup if lookup.kind.name == "TaskNotFoundError" else err
    if task.status.state in TERMINAL and call.ctx.client_version == V10:
        return a2a_error("UnsupportedOperationError", f"task {task.id[:64]} is in a terminal "
                         f"state ({pb.TaskState.Name(task.status.state)}); it cannot be "
                         f"subscribed to", taskId=task.id)
    return err


async def task_first(backend: Backend, call: Call, source: Events) -> Events:
    """v1.0 promises the Task first on subscribe; a v0.3 backend sends only what happens
    next, possibly nothing for a long time. Unless the backend's first event is a Task and
    comes at once, the gateway fetches the Task and sends it first."""

    async def next_item() -> pb.StreamResponse | None:
        try:
            return await source.__anext__()
        except StopAsyncIteration:
            return None

    pending = asyncio.ensure_future(next_item())  # opens the backend's stream
    try:
        done, _ = await asyncio.wait({pending}, timeout=TASK_FIRST_GRACE_SECONDS)
        try:
            item = pending.result() if done else None
        except A2AError as err:
            raise await _failed_subscribe(backend, call, err) or err from None
        if item is None or not item.HasField("task"):
            if done and item is None:  # the backend ended the stream without an event
                refusal = await _failed_subscribe(backend, call, None)
                if refusal is not None:
                    raise refusal
                return
            task_id = call.request.id
            yield pb.StreamResponse(task=await current_task(backend, call, task_id))
            item = await pending
            if item is None:
                return
        yield item
    finally:
        if not pending.done():
            pending.cancel()
            await asyncio.wait({pending})  # the source must be idle before it closes
    async for item in source:
        yield item
