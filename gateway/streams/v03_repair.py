"""What a v0.3 backend's stream lacks that a v1.0 stream promises (reference §3.6, §3.8),
added on the canonical stream whatever the client speaks:

- subscribe begins with the Task (a v0.3 backend sends only what happens next);
- a stream ends with the status that ends or interrupts the task (a v0.3 backend may
  close before sending it: a2a-sdk 0.3.26's gRPC TaskSubscription usually does);
- subscribing to a task that has already ended is UnsupportedOperationError for a v1.0
  client (v0.3 agents answer InvalidParams), and to an unknown task TaskNotFoundError
  (whatever the v0.3 agent's stream did).

The first is made on the backend's reads (:func:`v03_reads`), the second is a stream
filter (:class:`SettledEnd`, gateway/streams/filters.py), the third both.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.egress.base import Backend, EventBatches
from gateway.streams.events import close_stream
from gateway.streams.filters import Events
from translators import operations as ops
from translators.errors import A2AError, a2a_error
from translators.versions import V03, V10
from translators.vocabulary import TERMINAL, ends_stream

# How long a subscribe to a v0.3 backend waits for the backend's own first event before
# the gateway fetches the Task to send first (v0.3 backends send only what happens next).
TASK_FIRST_GRACE_SECONDS = 0.25


def v03_reads(backend: Backend, call: Call, source: EventBatches) -> EventBatches:
    """The backend's reads with the repair made before any event (a v0.3 backend's
    subscribe: the Task first); the others are the :class:`SettledEnd` filter."""
    if backend.config.version == V03 and call.op.name == ops.SUBSCRIBE:
        return task_first(backend, call, source)
    return source


async def current_task(backend: Backend, call: Call, task_id: str) -> pb.Task:
    get = Call(ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id=task_id), call.ctx)
    task = await backend.unary(get)
    if not isinstance(task, pb.Task):
        raise a2a_error("InvalidAgentResponseError", "the backend returned no task")
    return task


class SettledEnd:
    """A v1.0 stream ends with the status that ends the task (or interrupts it). When a
    v0.3 backend closes first, the gateway reads the task, and if it has ended, sends its
    status. A stream filter: it watches the task each event is about."""

    __slots__ = ("backend", "call", "context_id", "ended", "task_id")

    def __init__(self, backend: Backend, call: Call) -> None:
        self.backend, self.call = backend, call
        self.task_id = self.context_id = ""
        self.ended = False

    def event(self, item: pb.StreamResponse) -> Events:
        kind = item.WhichOneof("payload")
        if kind == "task":
            self.task_id, self.context_id = item.task.id, item.task.context_id
            self.ended = ends_stream(item.task.status.state)
        elif kind == "status_update":
            update = item.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            self.ended = ends_stream(update.status.state)
        elif kind == "artifact_update":
            self.task_id = item.artifact_update.task_id
            self.context_id = item.artifact_update.context_id
        else:
            self.ended = True  # a Message: no task
        return (item,)

    async def end(self) -> Events:
        if self.ended or not self.task_id:
            return ()
        try:
            task = await current_task(self.backend, self.call, self.task_id)
        except A2AError:
            return ()  # what the backend sent has been delivered; its close stands
        if not ends_stream(task.status.state):
            return ()
        return (pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id or task.context_id,
            status=task.status)),)


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


async def task_first(backend: Backend, call: Call, source: EventBatches) -> EventBatches:
    """v1.0 promises the Task first on subscribe; a v0.3 backend sends only what happens
    next, possibly nothing for a long time. Unless the backend's first event is a Task and
    comes at once, the gateway fetches the Task and sends it first."""

    async def first_read() -> tuple[pb.StreamResponse, Iterator[pb.StreamResponse]] | None:
        """The first event of the first read, and the rest of that read."""
        async for events in source:
            rest = iter(events)
            for item in rest:
                return item, rest
        return None

    pending = asyncio.ensure_future(first_read())  # opens the backend's stream
    try:
        try:
            done, _ = await asyncio.wait({pending}, timeout=TASK_FIRST_GRACE_SECONDS)
            try:
                first = pending.result() if done else None
            except A2AError as err:
                raise await _failed_subscribe(backend, call, err) or err from None
            if first is None or not first[0].HasField("task"):
                if done and first is None:  # the backend ended the stream without an event
                    refusal = await _failed_subscribe(backend, call, None)
                    if refusal is not None:
                        raise refusal
                    return
                task_id = call.request.id
                yield (pb.StreamResponse(task=await current_task(backend, call, task_id)),)
                first = await pending
                if first is None:
                    return
            item, rest = first
            yield itertools.chain((item,), rest)
        finally:
            if not pending.done():
                pending.cancel()
                await asyncio.wait({pending})  # the source must be idle before it closes
        async for events in source:
            yield events
    finally:
        await close_stream(source)  # after the first read is idle
