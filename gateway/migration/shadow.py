"""Shadow copies: a call the primary answered, made again to the candidate out of band, and
the two answers compared by meaning on canonical v1.0 objects (translators/answer_diff.py).

The client never waits for a copy: it is started as the primary's answer goes out, at
most `shadow.max_concurrent` at once (more are skipped and counted, never queued), and it
is sent, and compared, in the loop's spare time (spare.py: the clients' work first). A copy
carries no push config (the candidate would post to the client's webhook), and a task the
candidate started for it (a message's copy; never a task a GetTask copy found) is
cancelled once compared, unless it waits for its client. A copy names the candidate's
own task and conversation where a copy of the message that started them learned them
(counterparts.py); when messages are copied, a call on a task the candidate has no
counterpart of is not copied. With `aa`, the same call is also made again to the primary (naming the
tasks of its own A/A copies likewise): what the primary's two answers differ in is noise,
not reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.migration import ShadowConfig
from gateway.egress.base import Backend
from gateway.migration.counterparts import Counterparts, Learn, Wanted, outcome_ids
from gateway.migration.spare import spare_time
from gateway.migration.stats import TenantStats, Verdict, above_noise
from gateway.migration.sticky import CANDIDATE, point
from gateway.observability.metrics import (
    MIGRATION_COMPARISONS,
    MIGRATION_DIFFS,
    migration_call,
)
from gateway.streams.v03_repair import SettledEnd
from translators import operations as ops
from translators.answer_diff import CompareRules, Difference, compare, render
from translators.answer_view import Outcome
from translators.errors import A2AError, a2a_error
from translators.versions import V03
from translators.vocabulary import ends_stream

log = structlog.get_logger("a2a_gateway.migration")

SHADOW_BINDING = "migration-shadow"  # the client binding of a copy (logs, the task index)
Resolve = Callable[[Call], Awaitable[Backend]]
Reading = Callable[[], ProtoMessage | None]  # the primary's answer, read when compared


def _answered(answer: ProtoMessage | None) -> Outcome:
    """An answer as compared: an empty one as an empty task."""
    return answer if answer is not None else pb.Task()


def without_push_config(request: ProtoMessage) -> ProtoMessage:
    """``request`` as a copy sends it and the report shows it: without the client's push
    config (its webhook's address, token and credentials are the client's secrets)."""
    copy = type(request)()
    copy.CopyFrom(request)
    if isinstance(copy, pb.SendMessageRequest) and copy.HasField("configuration"):
        copy.configuration.ClearField("task_push_notification_config")
    return copy


def copy_of(call: Call, to_candidate: bool = True) -> Call:
    """The call as a copy sends it: the same canonical request (without a push config)
    and headers (to the candidate, without the gateway's credential for the primary), as
    the gateway's own call (no client to answer, nothing admitted)."""
    request = without_push_config(call.request)
    headers = (call.ctx.headers_for_another_agent() if to_candidate
               else call.ctx.backend_headers)
    facts = ClientFacts(SHADOW_BINDING, call.ctx.facts.request_id, headers, internal=True)
    ctx = CallContext(facts, call.ctx.client_version, tenant=call.ctx.tenant)
    return Call(call.op, request, ctx)


# The errors that are the agent's fault (or reaching it failed), not the caller's: a task
# not found or a bad request is an answer like any other.
_AGENTS_FAULT = frozenset({"InternalError", "BackendUnavailableError", "BackendTimeoutError",
                           "InvalidAgentResponseError"})
# The gateway's own (its state store failing under a call, or under a stream's journal):
# never the agent's, though 5xx, so a store outage does not roll a healthy candidate back.
_GATEWAYS_FAULT = frozenset({"StoreUnavailableError"})


def verdict_of(err: BaseException | None) -> Verdict:
    if err is None:
        return "ok"
    if isinstance(err, TimeoutError) or (isinstance(err, A2AError)
                                         and err.kind.name == "BackendTimeoutError"):
        return "timeout"
    return "error" if counts_against(err) else "ok"


def counts_against(err: BaseException) -> bool:
    """Whether an error counts against the agent (see _AGENTS_FAULT; any 5xx kind but
    the gateway's own, _GATEWAYS_FAULT)."""
    if not isinstance(err, A2AError):
        return True
    name = err.kind.name
    return name not in _GATEWAYS_FAULT and (name in _AGENTS_FAULT or err.kind.http >= 500)


def _last_state(outcome: Outcome) -> int | None:
    """The task's state an answer or a stream ends with (None: it shows no task)."""
    if isinstance(outcome, pb.Task):
        return int(outcome.status.state)
    if isinstance(outcome, pb.SendMessageResponse) and outcome.HasField("task"):
        return int(outcome.task.status.state)
    if isinstance(outcome, Sequence) and not isinstance(outcome, A2AError):
        for event in reversed(outcome):
            if event.HasField("task"):
                return int(event.task.status.state)
            if event.HasField("status_update"):
                return int(event.status_update.status.state)
    return None


def _task_left(outcome: Outcome) -> str:
    """The id of a task the candidate's answer left running ("" for none). A task that
    waits for its client (input or auth required) is not running: the client's next
    message, copied in its turn, carries it on."""
    task_id, _ = outcome_ids(outcome)
    state = _last_state(outcome)
    return task_id if task_id and state is not None and not ends_stream(state) else ""


class _Ids:
    """One copy's counterparts: those of the ids it names (looked up as it is made, before
    its own answer's are expected: a message that opens a conversation must not wait for
    the one it will itself teach), and the learning of its answer's."""

    __slots__ = ("learn", "wanted")

    def __init__(self, ids: Counterparts, call: Call, primary: tuple[str, str]) -> None:
        self.wanted: Wanted = ids.wanted(call.request)
        learns = call.op.name in (ops.SEND, ops.STREAM)
        self.learn: Learn = ids.expect(primary) if learns else _nothing


def _nothing(_: Outcome | None) -> None:
    return None


class Shadow:
    def __init__(self, tenant: str, config: ShadowConfig, keep: int, stats: TenantStats,
                 candidate: Resolve, primary: Resolve,
                 on_verdict: Callable[[], None] = lambda: None) -> None:
        self.tenant = tenant
        self.config = config
        self.stats = stats
        self.rules = CompareRules(tuple(config.compare.ignore), config.compare.text,
                                  config.compare.similarity)
        self._candidate = candidate
        self._primary = primary
        self._on_verdict = on_verdict  # the rollback's look at the window
        self._ops = frozenset(config.operations)
        self._running: set[asyncio.Task[None]] = set()
        self.keep = keep
        # When messages are copied, the candidate has tasks of its own: the primary's
        # task ids -> the candidate's, learned from the messages' copies. Without, the
        # two agents are taken to share their tasks (a successor over the same data).
        self._learns = bool(self._ops & {ops.SEND, ops.STREAM})
        self.counterparts = Counterparts()  # the candidate's ids for the primary's
        self.aa_counterparts = Counterparts()  # the A/A copies' ids for the primary's

    def carry(self, previous: Shadow, same_candidate: bool, same_primary: bool) -> None:
        """Keep the ids the copies of the config this one replaced (a reload) learned,
        where their agent is the same: without, a conversation copied before the reload
        would be carried on at the candidate under the primary's ids, which it never saw
        (each such copy a disagreement, which may roll the canary back)."""
        if same_candidate:
            self.counterparts = previous.counterparts
        if same_primary:
            self.aa_counterparts = previous.aa_counterparts

    def wants(self, call: Call) -> bool:
        """Whether this call of the primary's is copied (its operation, its share); the
        gateway's own calls (the task index refreshing ListTasks, the relay) never are; nor,
        when messages are copied, a call on a task the candidate has no counterpart of (it
        could only say it knows no such task)."""
        if self._learns and not self.counterparts.has_task(call.request):
            return False
        return call.op.name in self._ops and call.dialect is not None and (
            self.config.share >= 1
            or point(self.tenant, call.ctx.facts.request_id) < self.config.share)

    @property
    def in_flight(self) -> int:
        """Copies running now (compared or not yet)."""
        return len(self._running)

    def mirror(self, call: Call, answer: Outcome | Reading, seconds: float,
               ids: tuple[str, str]) -> None:
        """Start the copy of ``call``, whose primary answered ``answer`` in ``seconds``
        (or a function that reads it: an answer passed through as the agent sent it,
        read by the copy), showing the task and conversation ``ids``; skipped (and
        counted) when max_concurrent copies are running."""
        if len(self._running) >= self.config.max_concurrent:
            self.skipped()
            return
        copies = [_Ids(self.counterparts, call, ids)]
        if self.config.aa:
            copies.append(_Ids(self.aa_counterparts, call, ids))
        task = asyncio.get_running_loop().create_task(self._run(call, answer, seconds, copies))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def skipped(self) -> None:
        """A copy not made (max_concurrent copies running, a stream past max_bytes)."""
        self.stats.shadow.skipped += 1
        MIGRATION_COMPARISONS.labels(self.tenant, "skipped").inc()

    async def _run(self, call: Call, answer: Outcome | Reading, primary_seconds: float,
                   copies: list[_Ids]) -> None:
        # The tasks the copies started and left running (the candidate's; the A/A copy's
        # at the primary): cancelled when the copy ends, however it ends (compared, an
        # error or timeout midway through a stream, the config closing).
        left: list[tuple[Resolve, str]] = []
        try:
            spare = spare_time()
            await spare.wait()
            candidate, seconds, err = await self._made(self._candidate, call, copies[0],
                                                       left)
            verdict = verdict_of(err)
            # Counted for the candidate as its rollback counts it: in shadow mode the
            # copies are all that the candidate answers.
            self.stats.call(CANDIDATE, seconds, verdict)
            migration_call(self.tenant, CANDIDATE, verdict)
            again = ((await self._made(self._primary, call, copies[1], left))[0]
                     if self.config.aa else None)
            await spare.wait()  # read and compared in spare time too
            primary = _answered(answer()) if callable(answer) else answer
            noise = compare(primary, again, self.rules) if again is not None else None
            found = compare(primary, candidate, self.rules)
            ratio = self.config.compare.latency_ratio
            if ratio is not None and seconds > ratio * max(primary_seconds, 1e-6):
                found.append(_latency(primary_seconds, seconds))
            kept = above_noise(found, noise)
            agreed = self.stats.compared(kept, noise)
            MIGRATION_COMPARISONS.labels(self.tenant, "agree" if agreed else "disagree").inc()
            for kind in sorted({d.kind for d in kept}):
                MIGRATION_DIFFS.labels(self.tenant, kind).inc()
            if not agreed:
                self.stats.disagreements.appendleft(_disagreement(
                    call, primary, candidate, primary_seconds, seconds, kept))
            self._on_verdict()
        except Exception:  # a copy never troubles the client: logged, counted
            self.stats.shadow.failed += 1
            MIGRATION_COMPARISONS.labels(self.tenant, "failed").inc()
            log.exception("shadow copy failed", tenant=self.tenant,
                          request_id=call.ctx.facts.request_id)
        finally:
            for ids in copies:  # learned already, or never will be
                ids.learn(None)
            await self._cancelled_all(call, left)

    async def _cancelled_all(self, call: Call, left: list[tuple[Resolve, str]]) -> None:
        """Each task of ``left`` cancelled, one after the other; the config closing
        meanwhile cuts none of them off, only shortens the wait of the rest (and is
        raised once they are done)."""
        cut_off: asyncio.CancelledError | None = None
        for resolve, task_id in left:
            try:
                await self._cancel(call, resolve, task_id)
            except asyncio.CancelledError as exc:  # cut off: once more, within the bound
                cut_off = exc
                with contextlib.suppress(asyncio.CancelledError):
                    await self._cancel(call, resolve, task_id)
        if cut_off is not None:
            raise cut_off

    async def _made(self, resolve: Resolve, call: Call, ids: _Ids,
                    left: list[tuple[Resolve, str]],
                    ) -> tuple[Outcome, float, BaseException | None]:
        """A copy of ``call`` made to the backend ``resolve`` gives: its answer (or
        error), the seconds it took, and the error; the ids its answer shows (a stream's
        events so far, when it failed midway) are learned as counterparts before the
        comparison (a copy waiting for them goes on), and a message's task it left
        running goes to ``left``."""
        copy = copy_of(call, to_candidate=resolve is self._candidate)
        await Counterparts.translate(copy.request, ids.wanted, self.config.timeout)
        events: list[pb.StreamResponse] = []  # a stream's, read so far
        shown: Outcome = events  # what the agent showed (also when cut off midway)
        try:
            outcome, took, err = await self._sent(resolve, copy, events)
            shown = events if err is not None and events else outcome
            ids.learn(shown)
            return outcome, took, err
        finally:
            task_id = _task_left(shown) if call.op.name in (ops.SEND, ops.STREAM) else ""
            if task_id:
                left.append((resolve, task_id))

    async def _sent(self, resolve: Resolve, copy: Call, events: list[pb.StreamResponse],
                    ) -> tuple[Outcome, float, BaseException | None]:
        started = time.monotonic()
        try:
            backend = await resolve(copy)
            async with asyncio.timeout(self.config.timeout):
                if copy.op.name == ops.STREAM:
                    await self._events(backend, copy, events)
                    outcome: Outcome = events
                else:
                    answer = await backend.unary(copy)
                    outcome = _answered(answer)
            return outcome, time.monotonic() - started, None
        except A2AError as err:
            return err, time.monotonic() - started, err
        except TimeoutError as exc:
            late = a2a_error("BackendTimeoutError",
                             f"the shadow copy took over {self.config.timeout:g} s")
            return late, time.monotonic() - started, exc

    async def _events(self, backend: Backend, copy: Call,
                      events: list[pb.StreamResponse]) -> None:
        """The copy's stream, read into ``events`` (what was read stays there when it
        fails midway)."""
        read = 0
        # A v0.3 agent's stream is settled as the client's is (the status that ends its
        # task, read when it closes first): the primary's recorded events were.
        settled = SettledEnd(backend, copy) if backend.config.version == V03 else None
        async for batch in backend.stream(copy):
            for event in batch:
                read += event.ByteSize()
                if read > self.config.max_bytes:  # the primary's fit (else no copy): differs
                    return
                events.append(event)
                if len(events) >= self.config.max_events:
                    return
                if settled is not None:
                    settled.event(event)
        if settled is not None:
            for event in await settled.end():  # bounded as the agent's own events are
                read += event.ByteSize()
                if read > self.config.max_bytes:
                    return
                events.append(event)

    async def _cancel(self, call: Call, resolve: Resolve, task_id: str) -> None:
        """Cancel a task a copy left running at the agent ``resolve`` gives; within
        CLOSING_CANCEL seconds when the copy was cancelled (the config closing)."""
        cancel = copy_of(Call(ops.BY_NAME[ops.CANCEL], pb.CancelTaskRequest(id=task_id),
                              call.ctx), to_candidate=resolve is self._candidate)
        current = asyncio.current_task()
        closing = current is not None and current.cancelling() > 0
        try:
            backend = await resolve(cancel)
            async with asyncio.timeout(CLOSING_CANCEL if closing else self.config.timeout):
                await backend.unary(cancel)
        except Exception as err:  # the agent's error or timeout (or ours): said, no more
            log.info("shadow task not cancelled", tenant=self.tenant, task_id=task_id[:64],
                     error=str(err) or type(err).__name__)

    async def close(self) -> None:
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)


def _latency(primary: float, candidate: float) -> Difference:
    return Difference("latency", "latency", f"{primary * 1000:.1f} ms",
                      f"{candidate * 1000:.1f} ms")


# Seconds a copy's task gets to be cancelled once the config that made it is closing.
CLOSING_CANCEL = 2.0

# The differences a disagreement keeps for the report (each up to ~400 characters).
SHOWN_DIFFERENCES = 100


def _disagreement(call: Call, primary: Outcome, candidate: Outcome, primary_seconds: float,
                  candidate_seconds: float, found: Sequence[Difference]) -> dict[str, Any]:
    return {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "operation": call.op.name, "request_id": call.ctx.facts.request_id,
            "request": render(without_push_config(call.request)), "primary": render(primary),
            "candidate": render(candidate),
            "primary_ms": round(primary_seconds * 1000, 3),
            "candidate_ms": round(candidate_seconds * 1000, 3),
            "differences": [{"kind": d.kind, "path": d.path, "primary": d.primary,
                             "candidate": d.candidate} for d in found[:SHOWN_DIFFERENCES]],
            "differences_not_shown": max(0, len(found) - SHOWN_DIFFERENCES)}
