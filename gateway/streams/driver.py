"""One stream driver per call: one loop reads the backend's batches, runs each event
through the call's filter chain (gateway/streams/filters.py) and hands what comes out
to a sink, which frames and writes it in the client's dialect (SSE for JSON-RPC and
REST, gRPC messages). The sinks differ only in how they write and end; the read
bounds, the turns, the cancel/drain/teardown tail and the one log line per call are
here, once.

Per event the loop makes no generator step of its own: the backend's batch is iterated
in place (a read's events are decoded as they are taken, so that a read of hundreds
is served in turns, gateway/streams/turns.py), the chain is one call per filter, and
the sink frames into a buffer written once per turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, TypeVar

import structlog
from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.egress.base import EventBatches
from gateway.observability.metrics import HELD_STREAMS
from gateway.observability.observe import finish
from gateway.streams.deadline import Deadline
from gateway.streams.events import FinalFlags, close_stream
from gateway.streams.filters import Bounds, Chain, Gate
from gateway.streams.journal import StreamJournal
from gateway.streams.registry import Streams
from gateway.streams.turns import Turn
from translators.errors import A2AError, a2a_error

log = structlog.get_logger("a2a_gateway.streams")


@dataclass(slots=True)
class StreamPlan:
    """One call's stream as the pipeline opens it: the backend's reads (with the repairs
    made on reads), the filter chain, the read bounds, the v0.3 client's `final` flags
    and, for a creating stream, its task written first."""

    reads: EventBatches
    chain: Chain
    bounds: Bounds
    final_flags: FinalFlags | None
    written_first: Gate | None
    journal: StreamJournal | None = None  # with the journal on
    # The rest of a read whose events were being written when the client went away: the
    # hold journals them first (a journaled stream only).
    unread: Iterator[pb.StreamResponse] | None = None


R = TypeVar("R", covariant=True)


class Sink(Protocol[R]):
    """Where a stream's events go, in the client's dialect; :meth:`result` is what the
    transport's handler returns once the stream has ended."""

    each_event: bool  # one write per event (gRPC messages), not one per turn
    opened: bool  # something has been written: an error is now the stream's last event
    answers_early_drain: bool  # a shutdown before the first event is answered as an error

    def frame(self, item: pb.StreamResponse, final: bool, event_id: str | None = None) -> None:
        """Frame ``item`` (``final``: its v0.3 `final` flag; ``event_id``: its SSE id, when
        journaled) to be written."""
        ...

    async def flush(self, due: bool) -> None:
        """Write what is framed; not ``due`` (in the middle of a read): when it is time."""
        ...

    def keeps(self) -> bool:
        """Whether :meth:`flush` not ``due`` would keep what is framed for a later write
        now: a journaled stream's events then wait unjournaled too (one append a write,
        not one a turn)."""
        ...

    async def fail(self, err: A2AError) -> None:
        """End with ``err``: an error answer before the first event, else its last event."""
        ...

    async def finish(self) -> None:
        """End after the last event."""
        ...

    def drop(self) -> None:
        """A write took longer than allowed: drop the connection."""
        ...

    def result(self) -> R: ...


T = TypeVar("T")


class _TooSlow(Exception):
    """A write to the client took longer than `write_timeout`."""


class _ClientGone(Exception):
    """The client's connection broke during a write."""


_READING, _FILTERING, _WRITING = range(3)  # where the loop is, for whom an error blames
_EARLY_DRAIN = "the gateway is shutting down before the stream's first event; retry"


async def drive(call: Call, opening: AbstractAsyncContextManager[StreamPlan], sink: Sink[T],
                streams: Streams | None, binding: str,
                write_timeout: float | None = None,
                leave: Callable[[], bool] | None = None) -> T:
    """Serve the call's stream to ``sink`` and end it: normally, with an error in the
    client's dialect, or (the client gone, a write too slow) without an end. A client
    that goes away closes the backend's stream; a shutdown (``streams.draining``) ends
    the stream properly, the events already framed included; with ``leave`` (the sink
    ends for its client and takes no more writes), a journaled one whose task goes on
    is read on into the journal until the task ends or the drain's deadline instead
    (gateway/ingress/sse_out.py). Logged once."""
    error: BaseException | None = None  # what the call's log line says
    failure: A2AError | None = None  # what the client is told
    ends = True
    held = False  # read on past the drain's start, its client ended
    tracked = streams.track(binding) if streams is not None else contextlib.nullcontext()
    try:
        # Tracked from the start: at shutdown a stream still waiting for its first event
        # is answered too, not left to the connection drain's reset after the grace.
        with tracked:
            turn = Turn(streams.openings if streams is not None else None)
            left: BaseException | None = None
            async with opening as plan:
                pumping = True
                if leave is not None and streams is not None:
                    def at_drain() -> bool:  # the drain's question: read on, or cancel?
                        nonlocal held
                        held = pumping and _holdable(plan) and leave()
                        return held

                    streams.on_drain(at_drain)
                try:
                    await _pump(call, plan, sink, turn, write_timeout)
                except (asyncio.CancelledError, _TooSlow, _ClientGone) as exc:
                    # The client's doing (gone, or too slow), or the shutdown's: not the
                    # backend call's, whose span and slots end as after its last event.
                    left = exc
                    if isinstance(exc, _ClientGone) and _holdable(plan) and not (
                            streams is not None and streams.draining):
                        # The call ends for its client now (its line, its counts); the
                        # reading on is the journal's. (A journaled stream runs in a
                        # task of its own, which the client's leaving does not cancel:
                        # gateway/streams/detach.py.)
                        client_left(call)
                        await _hold(call, plan, turn, streams)
                finally:
                    pumping = False  # what ends now ends as without a drain
                    await close_stream(plan.reads)
            if left is not None:
                try:
                    raise left
                finally:
                    left = None  # no cycle through its traceback (below)
    except asyncio.CancelledError as exc:
        if streams is None or not streams.draining:
            error = exc  # the client went away: logged and counted as CLIENT_CANCELLED
            raise
        asyncio.current_task().uncancel()  # type: ignore[union-attr]
        if not sink.opened and sink.answers_early_drain:
            error = failure = a2a_error("BackendUnavailableError", _EARLY_DRAIN)
    except _TooSlow:  # a client that stopped reading
        error, ends = TimeoutError(), False
        sink.drop()
    except _ClientGone:
        # The client went away mid-write: its doing, as a cancellation is, not a failure
        # of ours (no error line with a traceback).
        error, ends = asyncio.CancelledError(), False
    except Exception as exc:  # A2AError, or a bug of ours: answer in the client's dialect
        error = exc
        failure = exc if isinstance(exc, A2AError) else a2a_error("InternalError")
        if held:  # its client has had its end: nobody to tell
            log.info("held stream ended", reason=type(exc).__name__)
    finally:
        finish(call.ctx, call.op.name, error)
        # A cancellation's traceback holds this frame: kept here it would make a cycle
        # that only the collector frees (full collections stall the loop when 10,000
        # streams are open).
        error = None
    if not ends:
        return sink.result()
    if failure is not None:
        await sink.fail(failure)
    else:
        await sink.finish()
    return sink.result()


def client_left(call: Call, drained: bool = False) -> None:
    """A stream's client went away (``drained``: had its end at the drain) while the
    stream is read on for the journal: the call ends for the client now (counted,
    CLIENT_CANCELLED or OK) and gives the caller's stream slot back (once)."""
    finish(call.ctx, call.op.name, None if drained else asyncio.CancelledError())
    if call.ctx.on_leaving is not None:
        call.ctx.on_leaving()


def _holdable(plan: StreamPlan) -> bool:
    """Whether a stream can be read on without its client: its task journaled and not
    ended, a hold configured."""
    journal = plan.journal
    return (journal is not None and journal.config.holds and bool(journal.task_id)
            and not journal.terminal and not journal.broken)


async def _hold(call: Call, plan: StreamPlan, turn: Turn, streams: Streams | None) -> None:
    """Read the backend's stream on into the journal, for `state.journal.hold` seconds at
    most (and the stream's own bounds), so that a client that comes back with its last
    id gets what the backend sent meanwhile. Ends quietly: the client is gone."""
    assert plan.journal is not None
    HELD_STREAMS.inc()
    if plan.unread is not None:
        plan.reads, plan.unread = _rest_first(plan.unread, plan.reads), None
    hold = asyncio.timeout(plan.journal.config.hold)
    try:
        async with hold:
            await _pump(call, plan, _NoClient(), turn, None)
    except asyncio.CancelledError:
        if streams is None or not streams.draining:
            raise
        asyncio.current_task().uncancel()  # type: ignore[union-attr]
    except Exception as exc:  # the backend's error or timeout: nobody to tell
        if not hold.expired():  # the hold running out is no one's failure
            call.ctx.outcome.held_error = exc
        log.info("held stream ended", task_id=plan.journal.task_id[:64],
                 reason=type(exc).__name__)


async def _rest_first(rest: Iterator[pb.StreamResponse], reads: EventBatches) -> EventBatches:
    try:
        yield rest
        async for batch in reads:
            yield batch
    finally:
        await close_stream(reads)


class _NoClient:
    """The sink of a held stream: its events go only to the journal."""

    each_event = False
    opened = True
    answers_early_drain = False

    def frame(self, item: pb.StreamResponse, final: bool, event_id: str | None = None) -> None:
        pass

    async def flush(self, due: bool) -> None:
        pass

    def keeps(self) -> bool:
        return False  # the journal is all a held stream writes: each turn's events

    async def fail(self, err: A2AError) -> None:
        pass

    async def finish(self) -> None:
        pass

    def drop(self) -> None:
        pass

    def result(self) -> None:
        return None


async def _pump(call: Call, plan: StreamPlan, sink: Sink[object], turn: Turn,
                write_timeout: float | None) -> None:
    loop = asyncio.get_running_loop()
    reads, chain, bounds, flags = plan.reads, plan.chain, plan.bounds, plan.final_flags
    gate = plan.written_first
    each = sink.each_event
    journal = plan.journal
    pending: list[pb.StreamResponse] = []  # filtered, to be journaled before they are framed

    async def journaled() -> None:
        """The events filtered since the last write, in the journal, then framed with
        their ids (the store first: an event a client has seen can be resumed after)."""
        assert journal is not None
        framed = await journal.record(pending)
        pending.clear()
        for out, event_id in framed:
            sink.frame(out, flags is not None and flags.flag(out), event_id)

    outcome = call.ctx.outcome
    started = time.monotonic()
    first = True
    phase = _READING
    try:
        # One deadline for the whole stream, re-armed for each read (the backend's time)
        # and each write (the client's); disarmed while the events are filtered.
        async with Deadline() as deadline:
            while True:
                phase = _READING
                wait = bounds.next_read(loop.time())
                if wait <= 0:
                    # Past stream_max_duration: ended here, not by the timer, which a
                    # backend whose reads are always ready (never suspend) and a client
                    # that takes every event at once would never let run while armed.
                    raise TimeoutError
                deadline.arm(wait)
                batch = await anext(reads, None)
                deadline.disarm()
                if first:
                    outcome.backend_seconds = time.monotonic() - started
                    first = False
                if batch is None:
                    break
                phase = _FILTERING
                head = True
                items = iter(batch)
                for item in items:  # decoded as taken: the backend's error, if any
                    # Not before a read's first event: the turn was looked at after the
                    # last read, and a stream's very first event must be framed (and
                    # written: the sink writes its first frames at once) before it lets
                    # the others run — while a call starts every turn is over at once.
                    if head:
                        head = False
                    elif turn.over():
                        # The others' turn; what is framed may wait for the next write,
                        # and the events to journal with it. While a call starts, the
                        # turns are one event long and each of its steps waits for one:
                        # an append (a store transaction) and a write in each made every
                        # step several times longer (a new stream's first event +4-6 ms
                        # under 16 busy streams). So none then: the events wait for the
                        # end of the read, or of the call's start (PRIORITY at most).
                        if journal is not None:
                            plan.unread = itertools.chain((item,), items)
                            if pending and not (turn.short() or sink.keeps()):
                                await journaled()
                        phase = _WRITING
                        if write_timeout is not None:
                            deadline.arm(write_timeout)
                        await sink.flush(False)
                        deadline.disarm()
                        try:
                            await turn.pass_on()
                        except asyncio.CancelledError:
                            if pending:  # a shutdown's: what was read is journaled still
                                await journaled()
                            raise
                        phase = _FILTERING
                        plan.unread = None
                    if gate is not None and not gate.done:
                        await gate.before(item)
                    if journal is None:
                        for out in chain.event(item):
                            sink.frame(out, flags is not None and flags.flag(out))
                    else:
                        pending.extend(chain.event(item))
                        if not sink.opened and pending:
                            # The first event alone, journaled and written at once (a
                            # read brings many): its latency is the stream's first byte.
                            await journaled()
                            phase = _WRITING
                            plan.unread = items
                            await sink.flush(True)
                            plan.unread = None
                            phase = _FILTERING
                    if each:
                        phase = _WRITING
                        await sink.flush(True)
                        phase = _FILTERING
                # One write per read (or per turn's worth of events), not one per event.
                if pending:
                    await journaled()
                phase = _WRITING
                if write_timeout is not None:
                    deadline.arm(write_timeout)
                await sink.flush(True)
                deadline.disarm()
                if turn.over():
                    await turn.pass_on()
            phase = _FILTERING
            if journal is None:
                for out in await chain.end():
                    sink.frame(out, flags is not None and flags.flag(out))
            else:
                pending.extend(await chain.end())
                await journaled()
            if flags is not None and flags.unended is not None:
                sink.frame(flags.unended, True)  # the backend closed after it: final
            phase = _WRITING
            if write_timeout is not None:
                deadline.arm(write_timeout)
            await sink.flush(True)
            deadline.disarm()
    except TimeoutError:
        if phase != _READING:
            raise _TooSlow from None
        timed_out = bounds.timed_out(call)
        outcome.backend_error = timed_out.kind.reason
        raise timed_out from None
    except A2AError as err:
        if phase != _WRITING:
            outcome.backend_error = err.kind.reason
            if pending:
                await journaled()
            await sink.flush(True)  # the events before the error go first
        raise
    except ConnectionError:
        if phase == _WRITING:
            raise _ClientGone from None
        raise
    except Exception:
        if phase == _FILTERING:
            await sink.flush(True)
        raise

