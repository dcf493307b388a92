"""A call's stream plan, built once from the backend's version, the client's version and
the operation: which repairs the reads get, which filters the events pass, and whether
the client needs v0.3 `final` flags."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.egress.base import Backend, EventBatches
from gateway.streams.driver import StreamPlan
from gateway.streams.filters import (
    Bounds,
    Chain,
    Counted,
    Gate,
    Gates,
    StreamFilter,
    Watcher,
    WrittenFirst,
    final_flags,
)
from gateway.streams.journal import Journals, StreamJournal, resumed_reads
from gateway.streams.reattach import Backoff, reattaching
from gateway.streams.v03_repair import SettledEnd, current_task, v03_reads
from gateway.tasks.index import TaskIndex
from translators import operations as ops
from translators.versions import V03


def plan_stream(call: Call, backend: Backend, tasks: TaskIndex,
                journals: Journals | None = None, watcher: Watcher | None = None,
                ) -> StreamPlan:
    """``watcher``: a stage's look at the stream (the migration's: the first sight of its
    task, its events for a shadow copy), a filter after the others and a gate."""
    v03_backend = backend.config.version == V03
    journal = journals.open(call) if journals is not None else None
    resumed = journal is not None and journal.resumed
    if journal is None or not journal.resumed:
        reads = v03_reads(backend, call, backend.stream(call))
    else:
        # A stream call retried with the id of its last event resumes that task: its
        # message is not sent again.
        upstream = call if call.op.name == ops.SUBSCRIBE else Call(
            ops.BY_NAME[ops.SUBSCRIBE], pb.SubscribeToTaskRequest(id=journal.task_id),
            call.ctx, call.dialect, call.backend_card)
        check: Callable[[], Awaitable[None] | None] = (
            (lambda: None) if upstream is call else (lambda: tasks.admitting(upstream)))
        # A v0.3 backend's subscribe gets the Task first from the gateway (task_first):
        # a resumed client has the task already, and a Task read now may run ahead of
        # the events still on their way; it gets one only for a gap.
        reads = resumed_reads(journal, check, lambda gap: (
            v03_reads(backend, upstream, backend.stream(upstream)) if gap
            else backend.stream(upstream)))
    if journal is not None and journal.config.reattach_attempts > 0:
        reads = _reattached(call, backend, journal, reads)
    filters: list[StreamFilter] = []
    if v03_backend:
        filters.append(SettledEnd(backend, call))  # its end settled (reference §3.8)
    filters.append(Counted(call, tasks))  # after the repairs: what the client gets
    if watcher is not None:
        filters.append(watcher)
    written = WrittenFirst(call, tasks) if tasks.creates(call) and not resumed else None
    gate: Gate | None = written
    if watcher is not None and not watcher.done:
        gate = watcher if written is None else Gates(written, watcher)
    return StreamPlan(
        reads=reads,
        chain=Chain(filters),
        bounds=Bounds(backend.config, asyncio.get_running_loop().time()),
        final_flags=final_flags(call),
        written_first=gate,
        journal=journal)


def _reattached(call: Call, backend: Backend, journal: StreamJournal,
                reads: EventBatches) -> EventBatches:
    """The reads, subscribed to again at the backend when they break mid-task
    (gateway/streams/reattach.py). As on a resume (above), a v0.3 backend's subscribe
    gets no Task first from the gateway: fetched while the backend's first events are on
    their way (task_first waits for them), it would hold them too, and the client would
    get them twice, under a gap's mark."""

    def subscribe(task_id: str) -> EventBatches:
        again = Call(ops.BY_NAME[ops.SUBSCRIBE], pb.SubscribeToTaskRequest(id=task_id),
                     call.ctx, call.dialect, call.backend_card)
        return backend.stream(again)

    return reattaching(journal, reads, subscribe,
                       lambda task_id: current_task(backend, call, task_id),
                       Backoff.of(journal.config),
                       clean_end_breaks=backend.config.version != V03,
                       whole_task=call.ctx.client_version != V03)
