"""The task index as the pipeline sees it (README "State"): every task an answer, a stream
event or a relayed webhook shows is recorded (tenant, ids, state, status timestamp, the
principal that created it, the backend's dialect); a principal may reach only its own
tasks when ownership is on; ListTasks is answered from the index where the backend cannot
answer it (task_list.py).

Recording holds up only the calls that create a task or send a message to one: their
records are written before they are answered (read-your-writes through any worker or
replica), and when the store cannot take them the call is refused as unavailable. Every
other observation goes to a :class:`TaskRecorder`, which writes it in the background.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable, Iterator
from itertools import chain
from typing import Any

import structlog
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import GatewayConfig
from gateway.state import Store, StoreError, TaskQuery, TaskRecord, store_unavailable
from gateway.tasks.record import TaskRecorder, records_of, wire_records
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.errors import A2AError, a2a_error
from translators.task_facts import STATEFUL_EVENTS, TASK_ANSWERS, TaskFacts, facts_of
from translators.versions import V03

log = structlog.get_logger("a2a_gateway.task_index")

# The calls that create a task or add to one: their principal becomes its owner.
_CREATING = frozenset({ops.SEND, ops.STREAM})
# The client binding of the GetTask calls ListTasks from the index makes (task_list.py):
# it records what they find itself, knowing what it had.
REFRESH_BINDING = "task-index"


def task_of(call: Call) -> str:
    """The task a call acts on ("" for none: a new task, ListTasks, the card). By the
    operation's name (translators/operations.py's table), not isinstance() of the request:
    against a message class not its own, isinstance goes through protobuf's metaclass."""
    request: Any = call.request
    name = call.op.name
    if name in _CREATING:
        return str(request.message.task_id)
    field = ops.TASK_FIELD.get(name)
    return "" if field is None else str(getattr(request, field[0]))


def backend_label(call: Call) -> str:
    """The backend's dialect, never its address (what the index keeps of it)."""
    return f"{call.ctx.outcome.backend_binding}/{call.ctx.outcome.backend_version}"


class TaskIndex:
    """One gateway config's view of the index; off (records nothing, refuses nothing)
    without a store or with `state.tasks.record: false`."""

    def __init__(self, config: GatewayConfig, store: Store | None, shared: bool = True,
                 previous: TaskIndex | None = None) -> None:
        """``shared``: other processes (workers, replicas) read ``store`` too, so a task
        is written before its creation is answered; alone (one process on SQLite), the
        readers of this process flush first instead, and the creation goes on at once
        (its records kept until written: gateway/tasks/record.py), also those of the
        configs this one replaced (``previous``) while calls go on there."""
        settings = config.state.tasks
        self.settings = settings
        self.store = store if settings.record else None
        self.waits = shared or settings.wait_for_writes == "always"
        self.recorder = (TaskRecorder(store, settings.queue, settings.batch, settings.linger,
                                      settings.write_timeout, retain=not shared)
                         if store is not None and settings.record else None)
        self._probe: asyncio.Task[None] | None = None  # one store ping while it is failing
        # The recorders of the configs this one replaced, while open (a call on one may
        # have just created a task, answered without waiting: alone, see flush).
        self._earlier: list[TaskRecorder] = [] if previous is None else [
            r for r in (*previous._earlier, previous.recorder)
            if r is not None and not r.closed]
        # Tenants in migration mode: ListTasks shows both agents' tasks, from the index.
        self.merged: frozenset[str] = frozenset()
        self._owned = {name: settings.ownership if t.task_ownership is None
                       else t.task_ownership for name, t in config.tenants.items()}

    # ------------------------------------------------------------ recording

    def _owner(self, call: Call) -> str | None:
        """The owner a call's tasks get: its principal, for a call that creates tasks."""
        principal = call.ctx.principal
        return principal.key if principal is not None and call.op.name in _CREATING else None

    def answered(self, call: Call, result: ProtoMessage | WireAnswer | None,
                 ) -> Awaitable[None] | None:
        """A unary answer (canonical, or passed through as the backend sent it). For a
        call that creates a task (SendMessage), the write to wait for before answering;
        every other call's answer is written later, off its path (None)."""
        if self.recorder is None or result is None or call.op.name not in TASK_ANSWERS \
                or call.ctx.facts.binding == REFRESH_BINDING:
            return None
        creating = call.op.name in _CREATING
        if isinstance(result, WireAnswer):
            if 200 <= result.status < 300:
                dialect = call.dialect
                assert dialect is not None  # only a client's call is passed through
                item = (call.ctx.tenant or "", self._owner(call), backend_label(call),
                        dialect.binding, dialect.version, call.op.name, result.body,
                        result.document, call.ctx.outcome.agent)
                if creating and self._must_wait():  # read here: it waits for them anyway
                    return self._write(call, wire_records(item, time.time()))
                self.recorder.add_wire(item)
            return None
        if creating and self._must_wait():
            facts = facts_of(result)
            return self._write(call, self._records(call, facts)) if facts else None
        self._add(call, result)
        return None

    def _records(self, call: Call, facts: list[TaskFacts]) -> list[TaskRecord]:
        """The records of the tasks a call's answer or event shows: its tenant, the owner
        it gives them, its backend's dialect, and the agent of a migration it went to."""
        return records_of(call.ctx.tenant or "", self._owner(call), backend_label(call),
                          facts, time.time(), call.ctx.outcome.agent)

    def _must_wait(self) -> bool:
        """Whether a creating call waits for its records: when other processes read the
        store, or when the table is full (alone: what a full table would drop must not be
        a creation, so the call waits for room instead)."""
        assert self.recorder is not None
        return self.waits or self.recorder.full()

    def creates(self, call: Call) -> bool:
        """Whether the call's stream must have its task written before its first event
        goes out (SendStreamingMessage, with the index on, other processes reading it)."""
        return self.recorder is not None and call.op.name in _CREATING and self._must_wait()

    async def written_first(self, call: Call, events: Iterable[pb.StreamResponse],
                            ) -> tuple[Iterable[pb.StreamResponse], bool]:
        """A creating stream's batch of events before the client sees any: read up to the
        first that shows the task, which is written, as a unary creation is. The batch to
        send on (what was read, then the rest, still to be read in turns; or the error
        reading stopped at) and whether a task was written (the later batches then go
        as any stream's)."""
        taken: list[pb.StreamResponse] = []
        rest = iter(events)
        try:
            for item in rest:
                taken.append(item)
                if await self.wrote_first(call, item):
                    return chain(taken, rest), True
        except A2AError as err:  # an event the dialect cannot read: after the others
            return _then_raise(taken, err), False
        return taken, False

    async def wrote_first(self, call: Call, item: pb.StreamResponse) -> bool:
        """Whether ``item``, an event of a creating stream, shows its task, which is then
        written before the event goes out (a unary creation's way)."""
        if item.WhichOneof("payload") in STATEFUL_EVENTS:
            facts = facts_of(item)
            if facts:
                await self._write(call, self._records(call, facts))
                return True
        return False

    async def _write(self, call: Call, records: list[TaskRecord]) -> None:
        """A creating call's records, in the store before the call is answered; the call
        is refused as unavailable when they cannot be (the agent has the task, but no
        one is told of it, so no one can look for it in vain)."""
        assert self.recorder is not None
        try:
            await self.recorder.write(records)
        except StoreError as exc:
            log.warning("task created but not recorded: the call is refused",
                        tenant=call.ctx.tenant, tasks=[r.task_id[:64] for r in records],
                        request_id=call.ctx.facts.request_id, error=str(exc))
            raise store_unavailable("the task index cannot be written now") from exc

    def streamed(self, call: Call, item: pb.StreamResponse) -> None:
        """One event of a stream or a subscription. Only a Task and a status update show
        a task's state: the artifact chunks and messages that make most of a stream are
        passed over before anything is looked up for them."""
        if self.recorder is not None and item.WhichOneof("payload") in STATEFUL_EVENTS:
            self._add(call, item)

    def relayed(self, tenant: str, backend: str, event: pb.StreamResponse) -> None:
        """A webhook a backend posted to the push relay (no principal: the first owner
        recorded stays, see Store.record_task)."""
        if self.recorder is not None:
            facts = facts_of(event)
            if facts:
                self.recorder.add_all(records_of(tenant, None, backend, facts, time.time()))

    def _add(self, call: Call, message: ProtoMessage) -> None:
        """Record what ``message`` shows of the call's tasks, off the call's path."""
        assert self.recorder is not None
        facts = facts_of(message)
        if facts:
            self.recorder.add_all(self._records(call, facts))

    @property
    def records(self) -> bool:
        """Whether the index records tasks (a store, `state.tasks.record` on)."""
        return self.recorder is not None

    # ------------------------------------------------------------ ownership, listing

    def lists(self, call: Call, backend_version: str | None) -> bool:
        """Whether ListTasks is answered from the index: the backend has none (v0.3), or
        the call sees only its principal's tasks (which no backend can filter)."""
        return call.op.name == ops.LIST_TASKS and (
            backend_version == V03 or call.ctx.tenant in self.merged
            or self.owner_scope(call) is not None)

    def owner_scope(self, call: Call) -> str | None:
        """The owner a call is confined to: its principal's key when ownership applies
        to its tenant, else None (every task of the tenant)."""
        principal = call.ctx.principal
        if principal is None or self.recorder is None \
                or not self._owned.get(call.ctx.tenant or "", False):
            return None
        return str(principal.key)

    def admitting(self, call: Call) -> Awaitable[None] | None:
        """:meth:`admit`, when there is something to check (an owner to compare, a store
        that is failing under a creating call); None for the rest (nearly every call
        without authentication), at no more cost than asking."""
        failing = self.recorder is not None and self.recorder.failing
        if self.owner_scope(call) is None and not (failing and call.op.name in _CREATING):
            return None
        return self.admit(call)

    async def admit(self, call: Call) -> None:
        """Refuse a call on a task its principal does not own, as if the task did not
        exist (TaskNotFoundError: nothing says whose it is). A task the index holds no
        owner for (not created through the gateway with authentication on) is nobody's:
        refused too (README "State"). A call that would create a task while the store
        is failing is refused before it reaches the agent, unless the store answers now."""
        owner = self.owner_scope(call)
        task_id = task_of(call)
        if self.recorder is not None and self.recorder.failing and call.op.name in _CREATING:
            await self._store_back()
        if owner is None or not task_id:
            return
        if await self.owner_of(call.ctx.tenant or "", task_id) != owner:
            raise a2a_error("TaskNotFoundError", f"task {task_id[:64]!r} not found",
                            task_id=task_id[:64])

    async def owner_of(self, tenant: str, task_id: str) -> str | None:
        """The task's recorded owner: one store read, whether the task exists, is
        another's or has no owner — the same work, so the time taken tells nothing
        (issue 27). A task's creation is written before it is answered when other
        processes read the store; alone, this process's flush comes first (the same
        for every id)."""
        assert self.recorder is not None
        await self._written_first()
        stored = await self._stored(tenant, task_id)
        return None if stored is None else stored.owner

    async def _written_first(self) -> None:
        """Alone (no other process writes the store), what this process recorded is
        written before a read of it: else a task it created a moment ago would read as
        none (for a migration, as the primary's, and followed there after)."""
        if not self.waits and self.recorder is not None:
            await self.flush()

    async def flush(self) -> None:
        """What this process observed so far, written: by this config, and by those it
        replaced whose calls go on (a task one created a moment before the reload is
        read back by its owner); StoreUnavailable when it cannot be."""
        assert self.recorder is not None
        self._earlier = [r for r in self._earlier if not r.closed]
        try:
            for recorder in (*self._earlier, self.recorder):
                await recorder.flush()
        except StoreError as exc:
            raise store_unavailable("the task index cannot be read now", exc) from exc

    async def agent_of(self, tenant: str, task_id: str) -> str | None:
        """The migration agent recorded with a task (None: none, or no such task); one
        store read. A migration asks it of a task no one bound (gateway/migration/
        tenant.py)."""
        if self.store is None:
            return None
        await self._written_first()
        stored = await self._stored(tenant, task_id)
        return None if stored is None else stored.agent

    async def _stored(self, tenant: str, task_id: str) -> TaskRecord | None:
        assert self.store is not None
        try:
            return await self.store.get_task(tenant, task_id)
        except StoreError as exc:
            raise store_unavailable("the task index cannot be read now", exc) from exc

    async def conversation_agent(self, tenant: str, context_id: str) -> str | None:
        """Whether the index holds a task of conversation ``context_id``: None if not,
        else the migration agent recorded with its newest task ("" for none); one store
        read. A migration asks it of a conversation no one bound: one under way before
        (the migration, or the end of its binding), or one its agent's task row
        follows (gateway/migration/tenant.py)."""
        if self.store is None:
            return None
        await self._written_first()
        try:
            page = await self.store.list_tasks(TaskQuery(tenant, context_id=context_id), 1)
        except StoreError as exc:
            raise store_unavailable("the task index cannot be read now", exc) from exc
        return (page.records[0].agent or "") if page.records else None

    async def _store_back(self) -> None:
        """Ping the store that last failed (one ping at a time, shared); unavailable
        unless it answers."""
        assert self.store is not None and self.recorder is not None
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self.store.ping())
        try:
            await asyncio.shield(self._probe)
        except StoreError as exc:
            raise store_unavailable("the task index cannot be written now", exc) from exc
        self.recorder.failing = False

    async def close(self) -> None:
        if self.recorder is not None:
            await self.recorder.close()


def _then_raise(items: list[pb.StreamResponse], err: A2AError) -> Iterator[pb.StreamResponse]:
    yield from items
    raise err
