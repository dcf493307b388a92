"""Re-attaching upstream (docs/streams.md, "When the backend's stream breaks"): a
journaled stream whose backend stream breaks while its task goes on — the connection
reset or refused, or the stream closed before a status that ends it — is subscribed to
again at the backend (its subscribe call, never the message again), a few times with a
backoff, and goes on for the client without a break.

Only a journaled stream is re-attached: the journal is what tells what the client has,
so that what the backend sends again (the Task a v1.0 subscribe begins with, the events
in flight when the old stream broke) is left out and what the gateway could not see is
said (the Task marked as a gap), the way a resumed stream's subscribe is realigned
(gateway/streams/journal.py). Without it the client would get the task's snapshot again,
or miss events without being told; it gets the end or the error it got before.

When the backend stays away the client's stream ends cleanly, not with an error: its
last id resumes it (Last-Event-ID) once the backend is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from a2a.types import a2a_pb2 as pb

from gateway.config.state import JournalConfig
from gateway.egress.base import BackendGone, EventBatches
from gateway.observability.metrics import REATTACHES
from gateway.streams.events import close_stream
from gateway.streams.journal import StreamJournal
from translators.errors import A2AError
from translators.vocabulary import ends_stream

log = structlog.get_logger("a2a_gateway.streams")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Backoff:
    """How often and how soon a broken stream is subscribed to again: ``attempts`` in a
    row without the client getting anything new, the first at once, the next after
    ``first`` seconds, doubled each time up to ``most``."""

    attempts: int
    first: float
    most: float

    @classmethod
    def of(cls, config: JournalConfig) -> Backoff:
        return cls(config.reattach_attempts, config.reattach_backoff,
                   config.reattach_max_backoff)

    def delay(self, failed: int) -> float:
        """Seconds to wait before the attempt that follows ``failed`` failed ones."""
        if failed <= 0:
            return 0.0
        return min(self.most, self.first * 2.0 ** (failed - 1))


def _goes_on(journal: StreamJournal) -> bool:
    """Whether the client's task goes on as far as its stream told it: a task of its own
    (not a Message answer), not ended nor waiting for its client, ids still given."""
    return (bool(journal.task_id) and not journal.terminal and not journal.broken
            and not ends_stream(journal.last_state))


def settled(journal: StreamJournal, task: pb.Task,
            whole_task: bool = True) -> tuple[pb.StreamResponse, ...]:
    """What a client gets of its task when the backend refuses to be subscribed to again
    (the task ended meanwhile): its status, when that is all it lacks; else the Task,
    which the journal marks as a gap (it holds artifacts the client did not get). Not
    ``whole_task`` (a v0.3 client: its SDK takes one Task per stream and refuses a
    second), the artifacts it lacks come whole instead, each replacing its copy, then
    the status."""
    status = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id=task.id, context_id=task.context_id, status=task.status))
    if not journal.has_artifacts(task):
        if whole_task:
            return (pb.StreamResponse(task=task),)
        return (*(pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
            task_id=task.id, context_id=task.context_id, artifact=artifact, append=False,
            last_chunk=True)) for artifact in task.artifacts
            if len(artifact.parts) > journal.parts.get(artifact.artifact_id, -1)), status)
    return () if task.status.state == journal.last_state else (status,)


async def reattaching(journal: StreamJournal, reads: EventBatches,
                      subscribe: Callable[[str], EventBatches],
                      current: Callable[[str], Awaitable[pb.Task]], backoff: Backoff,
                      sleep: Sleep = asyncio.sleep, *, clean_end_breaks: bool = True,
                      whole_task: bool = True) -> EventBatches:
    """``reads``, and when they end or break while the task goes on, the reads of
    ``subscribe(task_id)`` (the backend's subscribe) after ``backoff``'s waits; an
    attempt that gives the client nothing new counts against ``backoff.attempts``. A
    subscribe the backend refuses ends the stream with ``current(task_id)`` (the task as
    it is, :func:`settled`, ``whole_task``); a backend that stays away, cleanly.
    ``clean_end_breaks``: whether a stream the backend closes cleanly before the task's
    end is a break (not for a v0.3 backend, which closes before its final status as a
    rule: SettledEnd settles that end). ``sleep``: the waits (tests give their own
    clock)."""
    source, again = reads, False  # again: source is a re-subscribe
    failed = 0  # attempts in a row that gave the client nothing new
    try:
        while True:
            before, got = journal.sent, False
            broke: A2AError | None = None
            try:
                async for events in source:
                    if again and not got:
                        REATTACHES.labels("reattached").inc()
                    got = True
                    yield events
            except BackendGone as exc:
                broke = exc
            except A2AError:
                if not again or got:
                    raise  # the backend's own answer: the stream's error, as before
                broke = None  # refused below
            await close_stream(source)
            if again and not got and broke is None:
                # Refused, or closed at once: the backend has no more of this task to
                # stream (it ended meanwhile); what the client lacks of it comes instead.
                REATTACHES.labels("refused").inc()
                last = await _current(journal, current, whole_task)
                if last:
                    yield last
                return
            if broke is None and not clean_end_breaks:
                return  # the backend's own end of its stream
            if _goes_on(journal):
                failed = 0 if journal.sent > before else failed + (1 if again else 0)
                if failed >= backoff.attempts:
                    REATTACHES.labels("gave_up").inc()
                    log.info("backend stream not re-attached: the client's stream ends; "
                             "it resumes with its last id", task_id=journal.task_id[:64],
                             attempts=failed)
                    return
                await sleep(backoff.delay(failed))
                await journal.rejoin()  # the subscribe's Task, repeats: StreamJournal.record
            if not _goes_on(journal):  # ended, or (a store failure) no telling what it has
                if broke is not None:
                    raise broke
                return
            source, again = subscribe(journal.task_id), True
    finally:
        await close_stream(source)


async def _current(journal: StreamJournal, current: Callable[[str], Awaitable[pb.Task]],
                   whole_task: bool) -> tuple[pb.StreamResponse, ...]:
    try:
        task = await current(journal.task_id)
    except A2AError:
        return ()  # what was sent stands; the client's last id resumes the rest
    return settled(journal, task, whole_task)
