"""One call's place in a migration: the arm that serves it, whether it starts a
conversation, and what its shadow copy compares. It counts the call's time and verdict
for its arm (a unary call's when the stage leaves or fails, a stream's as its hold), is
the first sight of a stream's task (whose owner is bound before the client learns its
id), and a stream's recorder of events for the shadow copy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.migration import MigrationConfig
from gateway.egress.base import Backend
from gateway.migration.counterparts import outcome_ids
from gateway.migration.shadow import Shadow, verdict_of
from gateway.migration.stats import TenantStats, Verdict
from gateway.migration.sticky import CANDIDATE, PRIMARY, Arm
from gateway.observability.metrics import migration_call
from translators import operations as ops
from translators.answer_view import Outcome
from translators.errors import A2AError
from translators.task_facts import canonical_ids

if TYPE_CHECKING:
    from gateway.routing.tenants import TenantRoute


class Migrating(Protocol):
    """What a ticket needs of its tenant's migration (gateway/migration/tenant.py)."""

    name: str
    config: MigrationConfig
    stats: TenantStats
    shadow: Shadow
    follows_index: bool

    def check_rollback(self) -> None: ...

    def answered(self, call: Call, ticket: Ticket, answer: Any) -> Awaitable[None] | None: ...

    def fell_back(self, call: Call) -> None: ...

    async def bind(self, call: Call, ticket: Ticket, task_id: str, context_id: str,
                   indexed: bool) -> None: ...


class Passage(Protocol):
    """What the migration reads and decides of a call's passage through the stages
    (gateway/pipeline/stages.py's Passage, which the pipeline owns)."""

    route: TenantRoute
    streaming: bool
    backend: Backend | None
    migration: object | None

    @property
    def to(self) -> Backend: ...


# The calls whose answer may show a task or a conversation no one bound yet: a message
# (in a known conversation it may start a new task). Any other call acts on a task whose
# owner is known already (it was routed by it), so its answer has nothing to bind.
_MAY_START = frozenset({ops.SEND, ops.STREAM})


# How the ids an answer shows are read: (call, answer, tasks_only) -> (task id, context id)
# (translators/task_facts.py's canonical_ids, answer_ids).
ReadIds = Callable[[Call, Any, bool], tuple[str, str]]


def shown_ids(read: ReadIds, call: Call, answer: Any, indexed: bool, arm: Arm,
              ) -> tuple[str, str, bool]:
    """The (task id, context id) ``answer`` shows, and whether they were read as the task
    index records them (``indexed``: the migration follows it). The candidate's answer that
    shows no task the index records is read whole: a task that a message or an artifact
    chunk names has no row to follow it, so it is bound (a task no one bound would be taken
    for the primary's); the primary's needs no binding."""
    if indexed:
        task_id, context_id = read(call, answer, True)
        if task_id or arm != CANDIDATE:
            return task_id, context_id, True
    task_id, context_id = read(call, answer, False)
    return task_id, context_id, False


def _event_ids(call: Call, item: Any, tasks_only: bool) -> tuple[str, str]:
    return canonical_ids(item, tasks_only)


class Ticket:
    __slots__ = ("arm", "backend", "call", "done", "events", "kept", "migration", "new",
                 "seconds", "shadowed", "started", "streaming")

    def __init__(self, migration: Migrating, call: Call, arm: Arm, new: bool,
                 streaming: bool) -> None:
        self.migration = migration
        self.call = call
        self.arm = arm
        self.new = new  # a new conversation: its owner is bound once its ids are known
        self.streaming = streaming
        self.shadowed = False
        self.backend: Backend | None = None  # a shadowed call's (its answer read later)
        self.started = 0.0
        self.seconds = 0.0
        # Nothing to bind (as a stream's first sight): the primary's call that is no new
        # conversation (an unbound task is the primary's already), or the candidate's call
        # on a task it owns that is no message. What a call binds is read from its answer,
        # canonical or passed through as the agent sent it (task_facts.answer_ids).
        self.done = not (new or (arm == CANDIDATE and call.op.name in _MAY_START))
        self.events: list[pb.StreamResponse] | None = None  # a shadowed stream's events
        self.kept = 0  # their bytes

    def fell_back(self) -> None:
        """The candidate refused the connection: the primary serves this conversation."""
        self.migration.fell_back(self.call)
        self.arm = PRIMARY
        if self.migration.follows_index:  # and the index records it so
            self.call.ctx.outcome.agent = PRIMARY

    # ------------------------------------------------ the call's time and verdict

    def count(self, verdict: Verdict) -> None:
        """The call's verdict and time (:attr:`seconds`), counted for its arm."""
        m = self.migration
        migration_call(m.name, self.arm, verdict)
        if m.stats.call(self.arm, self.seconds, verdict):
            m.check_rollback()

    def failed(self, error: Exception) -> None:
        """A unary call whose backend exchange failed (the stage's ``failed``)."""
        self.seconds = self.call.ctx.outcome.backend_seconds or 0.0
        self.count(verdict_of(error))
        if self.shadowed and isinstance(error, A2AError):
            self.migration.shadow.mirror(self.call, error, self.seconds, ("", ""))

    # ------------------------------------------------ a stream's hold

    async def __aenter__(self) -> None:
        self.started = time.monotonic()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        # Cancelled: the client left, or the journal's hold ran out on a stream read on
        # after it (the call was made: counted, not against the agent); anything else
        # not an Exception (the process ends): no verdict. A stream read on after its
        # client left ends here without an error; the backend's that ended it is kept.
        cancelled = isinstance(exc, asyncio.CancelledError)
        if exc is not None and not isinstance(exc, Exception) and not cancelled:
            return
        outcome = self.call.ctx.outcome
        if exc is None:
            exc = outcome.held_error
        backend_seconds = outcome.backend_seconds
        self.seconds = (backend_seconds if backend_seconds is not None
                        else time.monotonic() - self.started)
        self.count("ok" if cancelled else verdict_of(exc))

    # ------------------------------------------------ a stream's first sight of its task

    async def before(self, item: pb.StreamResponse) -> None:
        task_id, context_id, indexed = shown_ids(_event_ids, self.call, item,
                                                 self.migration.follows_index, self.arm)
        if task_id or context_id:
            self.done = True
            await self.migration.bind(self.call, self, task_id, context_id, indexed)

    # ------------------------------------------------ a shadowed stream's recorder

    def event(self, item: pb.StreamResponse) -> Sequence[pb.StreamResponse]:
        events = self.events
        bounds = self.migration.config.shadow
        if events is not None and len(events) < bounds.max_events:
            self.kept += item.ByteSize()
            if self.kept > bounds.max_bytes:  # too much to keep for a copy: none is made
                self.events = None
                self.migration.shadow.skipped()
                return (item,)
            copy = pb.StreamResponse()
            copy.CopyFrom(item)
            events.append(copy)
        return (item,)

    async def end(self) -> Sequence[pb.StreamResponse]:
        if self.events is not None:
            recorded: Outcome = self.events
            self.migration.shadow.mirror(self.call, recorded,
                                         self.call.ctx.outcome.backend_seconds or 0.0,
                                         outcome_ids(recorded))
        return ()
