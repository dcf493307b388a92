"""The gateway's stages, in the order every call passes them (gateway/pipeline/stages.py):

1. admission — who the caller is, whether it may call (auth), and its slot among its
   open calls or streams (auth.rate_limits); a backend OAuth token the backend refuses
   is fetched again on the next call; only when auth is configured;
2. router — the backend the call goes to (a discovered or fallback backend is picked
   here), and the loss policy its dialect applies;
   migration — for a tenant in migration mode, the agent the call goes to instead (the
   owner of its task or conversation, the canary's arm), its time and verdict counted,
   its shadow copy started as its answer goes out (gateway/migration);
3. precheck — the backend's card, when the tenant checks calls against it;
4. task index — a task of another principal is not found; ListTasks answered from the
   index where the backend cannot; each answer's tasks recorded;
5. pass-through — a call the backend's dialect takes as the client sent it (unary only);
6. push relay — the client's webhook sealed on the way in, restored on the way out;
7. extended card — the backend's addresses never handed out: the card lists ours;
8. limits — the backend address's (and the tenant's) slots for calls and streams;
9. tracing — the backend call's CLIENT span.

Admission comes before the router, so no unauthenticated call makes the gateway fetch a
card or open a connection; the holds are taken in the same order, slot before span.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    nullcontext,
)

from a2a.types import a2a_pb2 as pb

from gateway.auth.admission import admit
from gateway.auth.backend_creds import BackendCredentials
from gateway.auth.service import GatewayAuth
from gateway.call import Call
from gateway.cards.publisher import CardPublisher
from gateway.config.models import GatewayConfig
from gateway.egress.base import Backend
from gateway.migration.tenants import Migrations
from gateway.migration.ticket import Ticket
from gateway.observability import tracing
from gateway.pipeline.limits import CallLimits
from gateway.pipeline.stages import Answer, Passage, Stage, Stages, build
from gateway.relay.hooks import PushRelay
from gateway.routing.tenants import Unreachable
from gateway.tasks.index import TaskIndex
from gateway.tasks.listing import TaskLister
from translators.dialects.base import WireAnswer, check_backend_card, forwardable
from translators.errors import A2AError

Slot = AbstractContextManager[Callable[[], None]]  # a caller's slot, and its early release


@asynccontextmanager
async def _holding(slot: Slot, call: Call) -> AsyncIterator[None]:
    with slot as release:
        call.ctx.on_leaving = release  # a stream read on after its client left
        yield


@asynccontextmanager
async def _renewing(slot: Slot | None, creds: BackendCredentials,
                    call: Call) -> AsyncIterator[None]:
    """The caller's slot, and a backend that refuses the gateway's OAuth token makes the
    next call fetch another."""
    with slot if slot is not None else nullcontext() as release:
        call.ctx.on_leaving = release
        try:
            yield
        except A2AError as err:
            if err.kind.name == "UnauthenticatedError":
                creds.refused(call.ctx.backend_headers)
            raise


def _admission(auth: GatewayAuth | None) -> Stage | None:
    if auth is None:
        return None

    def enter(call: Call, passage: Passage) -> Awaitable[None]:
        return admit(auth.for_tenant(passage.route.name), call)

    def hold(call: Call, passage: Passage) -> AbstractAsyncContextManager[None] | None:
        policy = auth.for_tenant(passage.route.name)
        slot = None if call.ctx.facts.internal else policy.limits.hold(
            call.ctx.principal, passage.streaming)
        if policy.backend.oauth is not None:
            return _renewing(slot, policy.backend, call)
        return None if slot is None else _holding(slot, call)

    return Stage("admission", enter, hold)


def _router(config: GatewayConfig, migrating: frozenset[str]) -> Stage:
    """``migrating``: the tenants in migration mode, whose backend (the primary) is not
    the agent of every call: one whose card cannot be read fails only the calls that go
    to it (Unreachable), not those the migration sends to the candidate."""
    policy = config.loss_policy

    def routed(call: Call, passage: Passage, backend: Backend) -> None:
        passage.backend = backend
        outcome = call.ctx.outcome
        outcome.backend_version = backend.config.version
        outcome.backend_binding = backend.config.binding
        call.ctx.loss.policy = policy  # the backend's dialect applies it

    async def discover(call: Call, passage: Passage) -> None:
        route = passage.route
        try:
            backend = await route.backend(call)
        except A2AError as err:
            if route.name not in migrating:
                raise
            backend = Unreachable(route.config, err)
        routed(call, passage, backend)

    def enter(call: Call, passage: Passage) -> Awaitable[None] | None:
        fixed = passage.route.fixed_backend
        if fixed is None:  # discovered from the card, or to be resolved again
            return discover(call, passage)
        routed(call, passage, fixed)
        return None

    return Stage("router", enter)


def _migration(migrations: Migrations) -> Stage | None:
    tenants = migrations.active
    if not tenants:
        return None

    def enter(call: Call, passage: Passage) -> Awaitable[None] | None:
        m = tenants.get(passage.route.name)
        return None if m is None else m.choose(call, passage)

    def hold(call: Call, passage: Passage) -> AbstractAsyncContextManager[None] | None:
        ticket = passage.migration  # a stream's (a unary call's: leave or failed)
        return ticket if passage.streaming and isinstance(ticket, Ticket) else None

    def leave(call: Call, passage: Passage, answer: Answer) -> Answer:
        ticket = passage.migration
        if isinstance(ticket, Ticket):
            passage.also_wait(ticket.migration.answered(call, ticket, answer))
        return answer

    def failed(call: Call, passage: Passage, error: Exception) -> None:
        ticket = passage.migration
        if isinstance(ticket, Ticket):
            ticket.failed(error)

    return Stage("migration", enter, hold, leave, failed)


async def _fetch_card(call: Call, passage: Passage) -> None:
    call.backend_card = await passage.route.card_json()


def _precheck(call: Call, passage: Passage) -> Awaitable[None] | None:
    return _fetch_card(call, passage) if passage.route.config.precheck else None


def _task_index(tasks: TaskIndex, listing: TaskLister) -> Stage:
    def enter(call: Call, passage: Passage) -> Awaitable[None] | None:
        backend = passage.backend
        assert backend is not None  # the router's
        if not passage.streaming and tasks.lists(call, backend.config.version):
            passage.local = listing.list_tasks
        return tasks.admitting(call)  # a task of another principal is not found

    def leave(call: Call, passage: Passage, answer: Answer) -> Answer:
        # Recorded later, off this call's path, unless it created a task: in the store
        # before the answer goes out.
        passage.also_wait(tasks.answered(call, answer))
        return answer

    return Stage("task index", enter, leave=leave)


def _pass_through(call: Call, passage: Passage) -> None:
    """Same dialect object on both sides first: a translated call asks no more."""
    client, backend = call.dialect, passage.backend
    assert backend is not None  # the router's
    if passage.streaming or client is None \
            or client is not backend.dialect \
            or call.wire is None or not passage.route.config.pass_through \
            or not forwardable(call.op, call.request, client, backend.dialect,
                               backend.config.tenant):
        return
    passage.forward = True
    # What decoding dropped is not lost: the backend gets the client's own bytes.
    call.ctx.loss.passed_through()
    call.ctx.outcome.forwarded = True
    if call.backend_card is not None:
        check_backend_card(call.op, call.request, call.backend_card, call.ctx.facts.extensions)


def _push_relay(relay: PushRelay) -> Stage:
    def enter(call: Call, passage: Passage) -> Awaitable[None] | None:
        if passage.forward or not relay.concerns(call):
            return None
        return relay.rewrite_request(call)

    def leave(call: Call, passage: Passage, answer: Answer) -> Answer:
        if isinstance(answer, WireAnswer):
            return answer
        return relay.restore_response(call, answer)

    return Stage("push relay", enter, leave=leave)


def _extended_card(cards: CardPublisher) -> Stage:
    def leave(call: Call, passage: Passage, answer: Answer) -> Answer:
        if type(answer) is pb.AgentCard:  # (not isinstance: see translators/answers.py)
            return cards.rewrite_extended(answer, call.ctx)
        return answer

    return Stage("extended card", leave=leave)


def _limits(limits: CallLimits) -> Stage:
    def hold(call: Call, passage: Passage) -> AbstractAsyncContextManager[None]:
        return limits.stream(passage.route) if passage.streaming else limits.call(passage.route)

    return Stage("limits", hold=hold)


def _tracing(call: Call, passage: Passage) -> AbstractAsyncContextManager[None] | None:
    if not tracing.enabled or call.ctx.trace is None:
        return None  # no span to hold: nothing entered per call
    return tracing.backend_span(call.ctx, call.op.name)


def standard_stages(config: GatewayConfig, auth: GatewayAuth | None, tasks: TaskIndex,
                    listing: TaskLister, relay: PushRelay, cards: CardPublisher,
                    limits: CallLimits, migrations: Migrations) -> Stages:
    return build([
        _admission(auth),
        _router(config, frozenset(migrations.active)),
        _migration(migrations),
        Stage("precheck", _precheck),
        _task_index(tasks, listing),
        Stage("pass-through", _pass_through),
        _push_relay(relay),
        _extended_card(cards),
        _limits(limits),
        Stage("tracing", hold=_tracing),
    ])
