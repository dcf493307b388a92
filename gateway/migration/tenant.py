"""One tenant's migration: its candidate's route, who owns what, the share now, what was
counted, and the shadow copies; and the choice of the agent a call goes to.

Which agent serves a call (docs/migration.md has the whole rule): a call on a task, its
owner (bound, or recorded with the task's row in the task index; else the primary); a
message in a conversation, its owner likewise; a new conversation, a stable hash against
the share now (:meth:`TenantMigration.choose`); anything else, the primary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from functools import partial
from typing import Any, Protocol

import structlog
from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.migration import MigrationConfig
from gateway.egress.base import Backend, read_passed
from gateway.migration.agents import AgentNames
from gateway.migration.api import Move
from gateway.migration.control import Control
from gateway.migration.falling_back import FallingBack, Retarget
from gateway.migration.owners import Owners, owner_prefix
from gateway.migration.reported import report_of
from gateway.migration.shadow import Shadow
from gateway.migration.stats import TenantStats
from gateway.migration.sticky import CANDIDATE, PRIMARY, Arm, arm_for
from gateway.migration.ticket import Passage, Ticket, shown_ids
from gateway.observability.metrics import MIGRATION_FALLBACKS, MIGRATION_MOVES, MIGRATION_SHARE
from gateway.routing.tenants import TenantRoute
from gateway.state import Store
from gateway.streams.journal import read_cursor
from gateway.tasks.index import task_of
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.errors import A2AError
from translators.task_facts import answer_ids, canonical_ids

log = structlog.get_logger("a2a_gateway.migration")

_CONVERSING = frozenset({ops.SEND, ops.STREAM})


class Conversations(Protocol):
    """What a migration asks of the task index (gateway/tasks/index.py's TaskIndex)."""

    @property
    def records(self) -> bool: ...

    async def agent_of(self, tenant: str, task_id: str) -> str | None: ...

    async def conversation_agent(self, tenant: str, context_id: str) -> str | None: ...


class TenantMigration:
    def __init__(self, name: str, config: MigrationConfig, primary: TenantRoute,
                 candidate: TenantRoute, store: Store | None,
                 previous: TenantMigration | None = None,
                 retarget: Retarget | None = None, waits: bool = True,
                 conversations: Conversations | None = None, resumes: bool = False) -> None:
        """``retarget``: makes a call's push config again for the agent it falls back to
        (the push relay's); ``waits``: other processes read ``store`` (the candidate's
        bindings are written before its answer goes out: owners.py); ``conversations``:
        the task index, which knows the conversations under way before the migration;
        ``resumes``: streams resume from the journal (a stream's `Last-Event-ID` then
        names the task it goes on with; else it is ignored, as the journal ignores it)."""
        self.name = name
        self.resumes = resumes
        # Conversations and tasks are followed by the rows the index holds of their
        # tasks, which record the agent that served them (the index writes a row for
        # each anyway, before the answer where other processes read it; pruning binds
        # what it drops: tenants.Migrations.kept_owners): a new conversation whose
        # answer is a task writes no binding of its own. Without an index, each is bound.
        self.follows_index = conversations is not None and conversations.records
        self._index = conversations if self.follows_index else None
        self._tasks, self._contexts = owner_prefix(name, "task"), owner_prefix(name, "context")
        self.retarget = retarget
        self.config = config
        self.primary = primary
        self.candidate = candidate
        # What the store records for each agent (agents.py); the owners this process
        # follows are carried while both agents stay (else read anew by these names).
        self.names = AgentNames(primary.config, candidate.config)
        self.owners: Owners = (previous.owners
                               if previous is not None and previous.names == self.names
                               else Owners(store, config.owner_ttl, waits=waits,
                                           names=self.names))
        self._waits = waits  # the carried owners' (and the gauge) only once it serves
        self._serving = False
        self.stats = TenantStats(config.rollback, config.keep)
        if previous is not None:  # a reload: what the config before counted and learned
            self.stats.carry(previous.stats)
        self._gauge = MIGRATION_SHARE.labels(name)

        def share_set(share: float) -> None:
            if self._serving:
                self._gauge.set(share)
            self.stats.share_set(share)

        self.control = Control(name, config, store, on_share=share_set,
                               on_promoted=lambda: self.stats.restart())
        self.shadow = Shadow(name, config.shadow, config.keep, self.stats,
                             candidate.backend, primary.backend, self.check_rollback)
        if previous is not None:
            self.control.carry(previous.control)
            self.shadow.carry(previous.shadow, previous.candidate.config == candidate.config,
                              previous.primary.config == primary.config)
        self._rolling: asyncio.Task[None] | None = None
        mode = config.mode
        self.shadowing = mode == "shadow" or (mode == "canary" and config.shadow.with_canary)

    # ------------------------------------------------------------ the choice

    def choose(self, call: Call, passage: Passage) -> Awaitable[None] | None:
        """Pick the agent of ``call`` (the router picked the primary's backend); an
        awaitable when an owner must be read from the store first."""
        op = call.op.name
        task_id = task_of(call) or (_resumed(call) if self._resuming(call, passage) else "")
        context_id = ""
        if op in _CONVERSING:
            request: Any = call.request
            context_id = str(request.message.context_id)
        if task_id:
            arm = self.owners.known(self._tasks + task_id)
            if arm is None:
                return self._looked_up(call, passage, task_id, context_id)
            return self._go(call, passage, arm, new=False)
        if op not in _CONVERSING:
            return self._go(call, passage, PRIMARY, new=False)
        if context_id:
            arm = self.owners.known(self._contexts + context_id)
            if arm is None:
                return self._looked_up(call, passage, "", context_id)
            return self._go(call, passage, arm, new=False)
        return self._go(call, passage, self._new_arm(call, ""), new=True)

    def _resuming(self, call: Call, passage: Passage) -> bool:
        """Whether ``call`` is a stream the journal resumes (its `Last-Event-ID`): it goes
        on with a task already under way, whatever its message says."""
        return bool(call.ctx.facts.resume_from) and passage.streaming and self.resumes

    def _new_arm(self, call: Call, context_id: str) -> Arm:
        share = self.control.current()
        if share <= 0:
            return PRIMARY
        principal = call.ctx.principal
        key = context_id or (f"principal:{principal.key}" if principal is not None
                             else f"request:{call.ctx.facts.request_id}")
        return arm_for(self.name, key, share)

    async def _looked_up(self, call: Call, passage: Passage, task_id: str,
                         context_id: str) -> None:
        arm: Arm | None = None
        if task_id:
            arm = await self.owners.owner(self.name, "task", task_id)
            if arm is None:
                arm = self.owners.remember(self._tasks + task_id,
                                           await self._recorded(task_id))
        if arm is None and context_id:
            arm = await self.owners.owner(self.name, "context", context_id)
            if arm is None:
                arm = await self._under_way(context_id)
        new = arm is None and not task_id and call.op.name in _CONVERSING
        if arm is None:
            arm = self._new_arm(call, context_id) if new else PRIMARY
        waiting = self._go(call, passage, arm, new=new)
        if waiting is not None:
            await waiting

    async def _recorded(self, task_id: str) -> Arm:
        """The owner of a task no one bound: the candidate where the task index recorded
        it with the candidate, else the primary (a task from before the migration)."""
        if self._index is None:
            return PRIMARY
        agent = await self._index.agent_of(self.name, task_id)
        if agent is None:  # pruned since the binding was read? pruning binds what it drops
            again = await self.owners.owner(self.name, "task", task_id)
            if again is not None:
                return again
        return CANDIDATE if self.names.read(agent) == CANDIDATE else PRIMARY

    async def _under_way(self, context_id: str) -> Arm | None:
        """The owner of a conversation no one bound that is under way already (None: a
        new one): the task index holds a task of it. Recorded with the candidate: the
        candidate's (the row follows it, whatever the share is now). Recorded with no
        agent, it was made before the migration (or after its binding's `owner_ttl`):
        it stays with the primary, bound to it with the next write, for hashed as a new
        conversation it could go on at the candidate, which never saw it."""
        if self._index is None:
            return None
        agent = await self._index.conversation_agent(self.name, context_id)
        if agent is None:  # pruned since the binding was read? (as in _recorded)
            return await self.owners.owner(self.name, "context", context_id)
        key = self._contexts + context_id
        if self.names.read(agent) == CANDIDATE:
            return self.owners.remember(key, CANDIDATE)
        self.owners.bind_later([key], PRIMARY)
        return PRIMARY

    def _go(self, call: Call, passage: Passage, arm: Arm, new: bool) -> Awaitable[None] | None:
        ticket = Ticket(self, call, arm, new, passage.streaming)
        passage.migration = ticket
        if self.follows_index:  # the index records the agent with the call's tasks
            call.ctx.outcome.agent = arm if arm == PRIMARY else self.names.candidate
        if arm == PRIMARY:
            # A resumed stream sends the agent nothing new: nothing to copy.
            if self.shadowing and self.shadow.wants(call) \
                    and not self._resuming(call, passage):
                ticket.shadowed = True
                ticket.backend = passage.backend  # its answer, passed through, read later
                if passage.streaming:
                    ticket.events = []
            return None
        fixed = self.candidate.fixed_backend
        if fixed is None:
            return self._discovered(call, passage, ticket)
        self._to_candidate(call, passage, ticket, fixed)
        return None

    async def _discovered(self, call: Call, passage: Passage, ticket: Ticket) -> None:
        """The candidate as its card says. A card that cannot be read (or names no
        interface this gateway calls) is the candidate failing before anything was sent:
        a new conversation that may fall back goes to the primary (still the passage's),
        any other call fails, counted for the candidate either way (its rollback sees
        it)."""
        try:
            backend = await self.candidate.backend(call)
        except A2AError as err:
            if ticket.new and self.config.canary.fall_back:
                ticket.fell_back()
                return
            ticket.failed(err)
            raise
        self._to_candidate(call, passage, ticket, backend)

    def _to_candidate(self, call: Call, passage: Passage, ticket: Ticket,
                      backend: Backend) -> None:
        ctx, headers = call.ctx, call.ctx.backend_headers  # the primary's, if it falls back
        ctx.backend_headers = ctx.headers_for_another_agent()
        primary = passage.route
        passage.route, outcome = self.candidate, ctx.outcome
        passage.backend = (FallingBack(backend, passage.to, ticket.fell_back, self.retarget,
                                       headers, primary.card_json if primary.config.precheck
                                       else None)
                           if ticket.new and self.config.canary.fall_back else backend)
        outcome.backend_version, outcome.backend_binding = (backend.config.version,
                                                            backend.config.binding)

    # ------------------------------------------------------------ after the answer

    def answered(self, call: Call, ticket: Ticket, answer: Any) -> Awaitable[None] | None:
        """Count a unary call's answer for its arm; bind the owner of what it shows (a
        new conversation's, or one the candidate serves); mirror the call when it is
        shadowed."""
        ticket.seconds = call.ctx.outcome.backend_seconds or 0.0
        ticket.count("ok")
        if ticket.done and not ticket.shadowed:
            return None
        # A copy learns every id: a shadowed call's are read whole.
        task_id, context_id, indexed = shown_ids(_answer_ids, call, answer,
                                                 self.follows_index and not ticket.shadowed,
                                                 ticket.arm)
        if ticket.shadowed:
            self._mirror(call, ticket, answer, (task_id, context_id))
        if ticket.done:
            return None
        if not (task_id or context_id):
            return None
        ticket.done = True
        keys = self._keys(ticket, task_id, context_id, indexed)
        if not keys:
            return None
        if self.owners.waits and _awaited(ticket):
            return self.owners.bind(keys, ticket.arm)
        self.owners.bind_later(keys, ticket.arm)
        return None

    def _mirror(self, call: Call, ticket: Ticket, answer: Any, ids: tuple[str, str]) -> None:
        """Start the copy of a shadowed call the primary answered. An answer passed
        through as the agent sent it is read the translated way by the copy, after the
        client has it: shadowing keeps the client's call as it would be without."""
        backend = ticket.backend
        if isinstance(answer, WireAnswer) and backend is not None:
            self.shadow.mirror(call, partial(read_passed, call, backend, answer),
                               ticket.seconds, ids)
        elif isinstance(answer, pb.Task | pb.Message | pb.SendMessageResponse | pb.AgentCard):
            self.shadow.mirror(call, answer, ticket.seconds, ids)

    def _keys(self, ticket: Ticket, task_id: str, context_id: str, indexed: bool,
              ) -> list[str]:
        """The bindings to write: a new conversation's, and the candidate's task (a task
        no one bound is the primary's: the primary's task is only remembered here). What
        shows its task where the index follows the migration (``indexed``: the ids were
        read as the index records them, so a task id means a task row, which records the
        agent) is only remembered: the row says whose it is (:meth:`_recorded`,
        :meth:`_under_way`)."""
        keys = []
        arm = ticket.arm
        if context_id and ticket.new:
            key = self._contexts + context_id
            if task_id and indexed:
                self.owners.remember(key, arm)
            else:
                keys.append(key)
        if task_id:
            key = self._tasks + task_id
            if arm == CANDIDATE and not indexed:
                keys.append(key)
            else:
                self.owners.remember(key, arm)
        return keys

    async def bind(self, call: Call, ticket: Ticket, task_id: str, context_id: str,
                   indexed: bool) -> None:
        """The owners of a conversation and its task (one store write for both), before
        the client learns the ids where a follow-up through any replica must find them
        (:func:`_awaited`), else with the next write."""
        await self.owners.bind(self._keys(ticket, task_id, context_id, indexed),
                               ticket.arm, wait=_awaited(ticket))

    # ------------------------------------------------------------ rollback

    def fell_back(self, call: Call) -> None:
        self.stats.arms[CANDIDATE].fell_back += 1
        self.stats.call(CANDIDATE, 0.0, "error")
        MIGRATION_FALLBACKS.labels(self.name).inc()
        log.warning("candidate refused the connection: new conversation sent to the primary",
                    tenant=self.name, request_id=call.ctx.facts.request_id)
        self.check_rollback()

    def check_rollback(self) -> None:
        if self.control.share <= 0 or (self._rolling is not None and not self._rolling.done()):
            return
        reason = self.stats.breach()
        if reason is not None:
            self._rolling = asyncio.get_running_loop().create_task(
                self.move("rollback", "automatic", reason))

    async def move(self, action: Move, by: str, reason: str) -> None:
        if await self.control.move(action, by, reason):
            MIGRATION_MOVES.labels(self.name, action, by).inc()

    # ------------------------------------------------------------ the report

    async def report(self, last: int) -> dict[str, Any]:
        await self.control.refresh()
        return report_of(self, last)

    def serving(self, serves: bool) -> None:
        """This config serves the tenant now (Migrations.adopt), or no longer: the share
        gauge and the owners' settings are its own while it does (a config refused
        before serving changes neither)."""
        self._serving = serves
        if serves:
            self.owners.ttl, self.owners.waits = self.config.owner_ttl, self._waits
            self._gauge.set(self.control.share)

    async def close(self) -> None:
        await self.shadow.close()
        await self.owners.flushed()


def _answer_ids(call: Call, answer: Any, tasks_only: bool) -> tuple[str, str]:
    """The ids a unary answer shows: canonical, or passed through as the agent sent it
    (read from what the gateway parsed of it, not decoded: a new conversation keeps its
    pass-through)."""
    if not isinstance(answer, WireAnswer):
        return canonical_ids(answer, tasks_only)
    dialect = call.dialect
    if dialect is None or not 200 <= answer.status < 300:
        return "", ""
    return answer_ids(dialect.binding, dialect.version, call.op.name, answer.body,
                      answer.document, tasks_only)


def _awaited(ticket: Ticket) -> bool:
    """Whether the bindings a call's answer shows are written before the answer goes out
    (where other processes read the store): the candidate's, and a new conversation's
    (the primary's too: a conversation no one bound is a new one, which another process
    would hash anew, perhaps to the candidate, if the client's next message came first).
    The primary's task alone is not: a task no one bound is the primary's already."""
    return ticket.arm == CANDIDATE or ticket.new


def _resumed(call: Call) -> str:
    """The task a stream resumed by its `Last-Event-ID` goes on with ("" for none): the
    agent that owns it serves the resumed stream, whatever its message says."""
    cursor = read_cursor(call.ctx.facts.resume_from)  # (the caller checks it has one)
    return cursor[0] if cursor is not None else ""
