"""The call pipeline: route a canonical call to its tenant's backend and back.

Ingress codecs build a :class:`Call`; this module picks the backend, applies the loss
policy and the cross-version stream rules, and hands back canonical results. It knows
nothing of any wire format.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import (
    asynccontextmanager,
    contextmanager,
)

import aiohttp
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.auth.admission import build_auth
from gateway.auth.service import GatewayAuth
from gateway.call import Call, CallContext, ClientFacts
from gateway.cards.publisher import CardPublisher
from gateway.config.auth import effective
from gateway.config.models import BackendConfig, ConfigError, GatewayConfig
from gateway.config.tls import ClientTlsConfig
from gateway.egress.base import Backend
from gateway.egress.grpc import GrpcBackend
from gateway.egress.http import client_session
from gateway.egress.jsonrpc import JsonRpcBackend
from gateway.egress.rest import RestBackend
from gateway.migration.tenants import Migrations
from gateway.migration.ticket import Ticket
from gateway.pipeline.limits import CallLimits
from gateway.pipeline.stages import Passage
from gateway.pipeline.standard import standard_stages
from gateway.relay.hooks import PushRelay
from gateway.routing.tenants import TenantRoute
from gateway.state import Store
from gateway.streams.driver import StreamPlan
from gateway.streams.journal import Journals
from gateway.streams.plan import plan_stream
from gateway.tasks.index import TaskIndex
from gateway.tasks.listing import TaskLister
from gateway.tls.context import client_context
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.errors import A2AError, a2a_error
from translators.versions import VersionRules


def make_backend(config: BackendConfig, session: aiohttp.ClientSession,
                 tls: ClientTlsConfig | None = None) -> Backend:
    if config.binding == "JSONRPC":
        return JsonRpcBackend(config, session)
    if config.binding == "HTTP+JSON":
        return RestBackend(config, session)
    if config.binding == "GRPC":
        return GrpcBackend(config, tls)
    raise ConfigError(f"backend binding {config.binding} is not supported by this gateway "
                      f"build yet (backend {config.url}); use JSONRPC")


class Gateway:
    """Everything a request needs, built once per config."""

    def __init__(self, config: GatewayConfig, session: aiohttp.ClientSession,
                 store: Store | None = None, previous: Gateway | None = None,
                 shared_state: bool = False) -> None:
        """``shared_state``: other processes (workers, replicas) serve from ``store`` too:
        rate limits are kept there."""
        self.config = config
        self.version_rules = VersionRules(tuple(config.versions), config.strict_versions)
        self.cards = CardPublisher(config)
        # Who may call what, how often (README "Security"); None when nothing is
        # configured. A reload keeps the rate buckets and open-call counts. Built before
        # the routes: a secret file it cannot read stops the build before any session
        # is made.
        self.auth: GatewayAuth | None = build_auth(
            config, previous.auth if previous is not None else None,
            store if shared_state else None)
        self._own_sessions: list[aiohttp.ClientSession] = []
        try:
            self.tenants: dict[str, TenantRoute] = {
                name: self._route(name, t.backend, session,
                                  effective(config.auth, t.auth).backend_tls)
                for name, t in config.tenants.items()}
        except BaseException:
            # A tenant that cannot be built (a secret file gone since preflight): the
            # sessions made for the others were never used, so there is nothing to close
            # but their state, which aiohttp would otherwise report as unclosed.
            for own in self._own_sessions:
                own.detach()
            raise
        self.limits = CallLimits(config)
        # What outlives this config and is shared by workers and replicas (state/); the
        # server owns it and closes it.
        self.store = store
        self.relay = PushRelay(config, self.fetch_task, store=store)  # webhooks (relay/)
        # What calls show of tasks, who owns them.
        self.tasks: TaskIndex = TaskIndex(
            config, store, shared=shared_state,
            previous=previous.tasks if previous is not None else None)
        # Each SSE stream's journal, for clients that resume (docs/streams.md).
        self.journals = Journals(store, config.state.journal)
        self.listing = TaskLister(self.tasks, self.unary)  # ListTasks from the index
        # Tenants with a legacy agent and its successor (gateway/migration): what they
        # counted outlives a reload.
        self.migration: Migrations = Migrations(
            config, self.tenants, lambda name, c: self._route(
                name, c, session, effective(config.auth, config.tenants[name].auth)
                .backend_tls),
            store, previous.migration if previous is not None else None,
            retarget=self.relay.rewrite_again,  # a fallback's push config made again
            waits=self.tasks.waits, conversations=self.tasks,
            resumes=self.journals.store is not None)
        # ListTasks of a tenant in migration is answered from the index (both agents'
        # tasks), where it records them; without it, as any tenant's.
        self.tasks.merged = frozenset(self.migration.active if self.tasks.records else ())
        # What every call passes, in order, unary and stream alike.
        self.stages = standard_stages(config, self.auth, self.tasks, self.listing,
                                      self.relay, self.cards, self.limits, self.migration)
        self._in_flight = 0
        self._idle: asyncio.Event | None = None

    def _route(self, name: str, backend: BackendConfig, shared: aiohttp.ClientSession,
               tls: ClientTlsConfig | None) -> TenantRoute:
        """A tenant's route; with `backend_tls`, over its own connection pool whose TLS
        trusts the configured CA (and presents the client certificate)."""
        session = shared
        if tls is not None:
            session = client_session(client_context(tls))
            self._own_sessions.append(session)
        return TenantRoute(name, backend, session, lambda c: make_backend(c, session, tls))

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        """Count a call in flight, so a config this one replaced is closed only when its
        last call has ended (see :meth:`close_when_idle`)."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._untrack()

    def _untrack(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0 and self._idle is not None:
            self._idle.set()

    async def close_when_idle(self) -> None:
        """Close the backends and the relay once no call uses this gateway any more."""
        if self._in_flight:
            self._idle = asyncio.Event()
            await self._idle.wait()
        await self.close()

    async def close(self) -> None:
        await self.relay.close()  # deliveries in flight: finish or log
        await self.migration.close()  # shadow copies in flight: dropped
        await self.tasks.close()  # observations not written yet
        for route in self.tenants.values():
            await route.close()
        for session in self._own_sessions:
            await session.close()

    def tenant_for(self, name: str | None) -> TenantRoute:
        tenant = name or self.config.default_tenant
        if tenant is None:
            raise a2a_error("TenantNotFoundError",
                            "no tenant given and no default_tenant configured")
        route = self.tenants.get(tenant)
        if route is None:
            raise a2a_error("TenantNotFoundError", f"unknown tenant {tenant[:64]!r}",
                            tenant=tenant[:64])
        return route

    async def fetch_task(self, tenant: str, task_id: str, client_version: str) -> pb.Task | None:
        """The task as the tenant's backend has it now (for the relay's v0.3 snapshots)."""
        ctx = CallContext(ClientFacts("webhook-relay", internal=True), client_version,
                          tenant=tenant or None)
        result = await self.unary(Call(ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id=task_id),
                                       ctx))
        return result if isinstance(result, pb.Task) else None

    def _passage(self, call: Call, streaming: bool) -> Passage:
        """The call's tenant: its route, for the stages (gateway/pipeline/standard.py)."""
        route = self.tenant_for(call.ctx.tenant)
        call.ctx.tenant = call.ctx.outcome.tenant = route.name
        return Passage(route, streaming)

    async def unary(self, call: Call) -> ProtoMessage | WireAnswer | None:
        """The call's result, canonical; or, when the backend speaks the client's dialect
        and the call needs no change (``backend.pass_through``), the backend's answer as
        it came."""
        self._in_flight += 1  # as _tracked(), inline: every call passes here
        try:
            return await self._unary(call)
        finally:
            self._untrack()

    async def _unary(self, call: Call) -> ProtoMessage | WireAnswer | None:
        passage = self._passage(call, streaming=False)
        await self.stages.enter(call, passage)
        if passage.local is not None:  # answered by the gateway itself (the task index)
            return await passage.local(call)
        backend = passage.to
        async with self.stages.held(call, passage):
            started = time.monotonic()
            try:
                answer = await (backend.forward(call) if passage.forward
                                else backend.unary(call))
            except BaseException as err:  # also cancelled: its time, but no stage's verdict
                outcome = call.ctx.outcome
                outcome.backend_seconds = time.monotonic() - started
                if isinstance(err, A2AError):
                    outcome.backend_error = err.kind.reason
                if self.stages.fails and isinstance(err, Exception):
                    self.stages.failed(call, passage, err)
                raise
            call.ctx.outcome.backend_seconds = time.monotonic() - started
        return await self.stages.leave(call, passage, answer)

    @asynccontextmanager
    async def stream(self, call: Call) -> AsyncIterator[StreamPlan]:
        """The call's stream, through the same stages as a unary call, for the stream
        driver (gateway/streams/driver.py): the backend's reads and the call's filters,
        the stages' holds (the caller's slots, the backend span) kept until the driver
        is done."""
        with self._tracked():
            passage = self._passage(call, streaming=True)
            await self.stages.enter(call, passage)
            async with self.stages.held(call, passage):
                yield plan_stream(call, passage.to, self.tasks, self.journals,
                                  _ticket(passage))


def _ticket(passage: Passage) -> Ticket | None:
    """The migration's record of a stream (its owner bound at the first sight of its
    task, its events recorded for a shadow copy)."""
    ticket = passage.migration
    return ticket if isinstance(ticket, Ticket) and not (ticket.done and ticket.events is None
                                                         ) else None
