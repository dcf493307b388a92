"""The stream driver's filters (gateway/streams/filters.py, v03_repair.py, events.py) and
the driver's loop (gateway/streams/driver.py), each on plain lists of events: no server,
no socket; a backend is a list of reads and, where a repair reads the task, a table."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.models import BackendConfig, parse_config
from gateway.egress.base import EventBatches
from gateway.streams.driver import StreamPlan, drive
from gateway.streams.events import FinalFlags
from gateway.streams.filters import Bounds, Chain, Counted, Events
from gateway.streams.v03_repair import SettledEnd, task_first
from gateway.tasks.index import TaskIndex
from translators import operations as ops
from translators.errors import A2AError, a2a_error

WORKING, COMPLETED, INPUT = (pb.TASK_STATE_WORKING, pb.TASK_STATE_COMPLETED,
                             pb.TASK_STATE_INPUT_REQUIRED)


def status(state: int, task: str = "t1") -> pb.StreamResponse:
    return pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id=task, context_id="c1", status=pb.TaskStatus(state=state)))


def chunk(text: str, task: str = "t1") -> pb.StreamResponse:
    return pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id=task, context_id="c1", artifact=pb.Artifact(
            artifact_id="a", parts=[pb.Part(text=text)])))


def a_task(state: int, task: str = "t1") -> pb.Task:
    return pb.Task(id=task, context_id="c1", status=pb.TaskStatus(state=state))


def describe(items: Sequence[pb.StreamResponse]) -> list[str]:
    out = []
    for item in items:
        kind = item.WhichOneof("payload")
        if kind == "status_update":
            out.append(pb.TaskState.Name(item.status_update.status.state))
        elif kind == "artifact_update":
            out.append(item.artifact_update.artifact.parts[0].text)
        elif kind == "task":
            out.append(f"task {item.task.id} {pb.TaskState.Name(item.task.status.state)}")
        else:
            out.append("message")
    return out


def no_index() -> TaskIndex:
    """The task index with no store: it records nothing."""
    return TaskIndex(parse_config({"tenants": {"t": {"backend": {
        "url": "http://127.0.0.1:1/", "version": "0.3"}}}}), None, shared=False)


def a_call(op: str = ops.STREAM, request: object = None, client: str = "1.0") -> Call:
    return Call(ops.BY_NAME[op], request or pb.SendMessageRequest(),  # type: ignore[arg-type]
                CallContext(ClientFacts("JSONRPC"), client))


class TaskTable:
    """A backend that has only tasks to show (GetTask), and counts the reads."""

    def __init__(self, *tasks: pb.Task) -> None:
        self.config = BackendConfig(url="http://127.0.0.1:1/", version="0.3")
        self.dialect = None
        self.tasks = {t.id: t for t in tasks}
        self.reads = 0

    async def unary(self, call: Call) -> pb.Task:
        self.reads += 1
        assert isinstance(call.request, pb.GetTaskRequest)
        task = self.tasks.get(call.request.id)
        if task is None:
            raise a2a_error("TaskNotFoundError", "no such task")
        return task


async def reads_of(*batches: Sequence[pb.StreamResponse], closed: list[str] | None = None,
                   pause: float = 0.0) -> AsyncIterator[Sequence[pb.StreamResponse]]:
    try:
        for batch in batches:
            if pause:
                await asyncio.sleep(pause)
            yield batch
    finally:
        if closed is not None:
            closed.append("closed")


# ------------------------------------------------------------------ Chain, Counted

class Doubling:
    def event(self, item: pb.StreamResponse) -> Events:
        return (item, item)

    async def end(self) -> Events:
        return (chunk("end"),)


class Dropping:
    def event(self, item: pb.StreamResponse) -> Events:
        return () if item.HasField("artifact_update") else (item,)

    async def end(self) -> Events:
        return ()


async def test_a_chain_passes_what_each_filter_returns_to_the_next() -> None:
    chain = Chain([Doubling(), Dropping()])
    assert describe(chain.event(status(WORKING))) == ["TASK_STATE_WORKING"] * 2
    assert describe(chain.event(chunk("x"))) == []
    # What a filter adds at the end goes through the filters after it (dropped here).
    assert describe(await Chain([Doubling(), Dropping()]).end()) == []
    assert describe(await Chain([Dropping(), Doubling()]).end()) == ["end"]


async def test_counted_counts_every_event_it_passes() -> None:
    call = a_call()
    counted = Counted(call, no_index())
    out = [item for e in (status(WORKING), chunk("a"), chunk("b")) for item in counted.event(e)]
    assert describe(out) == ["TASK_STATE_WORKING", "a", "b"]
    assert call.ctx.outcome.events == 3
    assert await counted.end() == ()


# ------------------------------------------------------------------ FinalFlags

def test_final_flags_mark_the_status_that_ends_a_v03_stream() -> None:
    flags = FinalFlags()
    events = [status(WORKING), chunk("a"), status(INPUT)]
    assert [flags.flag(e) for e in events] == [False, False, True]
    assert flags.unended is None


def test_a_last_status_that_did_not_end_the_stream_is_kept_to_be_sent_again() -> None:
    flags = FinalFlags()
    assert [flags.flag(e) for e in (chunk("a"), status(WORKING))] == [False, False]
    assert flags.unended is not None and describe([flags.unended]) == ["TASK_STATE_WORKING"]
    flags.flag(chunk("b"))  # something came after it: it was not the last
    assert flags.unended is None


# ------------------------------------------------------------------ SettledEnd

async def test_settled_end_adds_the_status_of_a_task_that_ended_after_the_close() -> None:
    backend = TaskTable(a_task(COMPLETED))
    settled = SettledEnd(backend, a_call())  # type: ignore[arg-type]
    for e in (status(WORKING), chunk("a")):
        assert list(settled.event(e)) == [e]
    assert describe(await settled.end()) == ["TASK_STATE_COMPLETED"]
    assert backend.reads == 1


async def test_settled_end_adds_nothing_when_the_stream_ended_the_task_itself() -> None:
    backend = TaskTable(a_task(COMPLETED))
    settled = SettledEnd(backend, a_call())  # type: ignore[arg-type]
    settled.event(status(COMPLETED))
    assert await settled.end() == ()
    assert backend.reads == 0


async def test_settled_end_adds_nothing_for_a_task_still_working_or_unreadable() -> None:
    working = SettledEnd(TaskTable(a_task(WORKING)), a_call())  # type: ignore[arg-type]
    working.event(chunk("a"))
    assert await working.end() == ()
    unknown = SettledEnd(TaskTable(), a_call())  # type: ignore[arg-type]
    unknown.event(chunk("a"))
    assert await unknown.end() == ()  # the backend's close stands


# ------------------------------------------------------------------ task_first

async def test_task_first_sends_the_task_before_a_v03_subscribe_s_first_event() -> None:
    backend = TaskTable(a_task(WORKING))
    call = a_call(ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id="t1"))
    closed: list[str] = []
    reads = task_first(backend, call,  # type: ignore[arg-type]
                       reads_of([chunk("a")], [status(COMPLETED)], closed=closed))
    got = [describe(list(batch)) async for batch in reads]
    assert got == [["task t1 TASK_STATE_WORKING"], ["a"], ["TASK_STATE_COMPLETED"]]
    assert closed == ["closed"]


async def test_task_first_sends_the_backend_s_own_task_when_it_comes_first() -> None:
    backend = TaskTable(a_task(WORKING))
    call = a_call(ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id="t1"))
    own = pb.StreamResponse(task=a_task(INPUT))
    reads = task_first(backend, call, reads_of([own, chunk("a")]))  # type: ignore[arg-type]
    got = [describe(list(batch)) async for batch in reads]
    assert got == [["task t1 TASK_STATE_INPUT_REQUIRED", "a"]]
    assert backend.reads == 0


async def test_task_first_refuses_an_ended_task_in_the_v10_way() -> None:
    backend = TaskTable(a_task(COMPLETED))
    call = a_call(ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id="t1"))
    reads = task_first(backend, call, reads_of())  # type: ignore[arg-type]
    with pytest.raises(A2AError) as refused:
        await anext(reads)
    assert refused.value.kind.name == "UnsupportedOperationError"


# ------------------------------------------------------------------ Bounds

def test_bounds_first_event_then_idle_then_what_is_left_of_the_total() -> None:
    config = BackendConfig(url="http://127.0.0.1:1/", version="0.3", first_event_timeout=7,
                           stream_idle_timeout=3, stream_max_duration=10)
    bounds = Bounds(config, now=100.0)
    assert bounds.next_read(100.0) == 7 and bounds.waiting_for == "the first event"
    assert bounds.next_read(101.0) == 3 and bounds.waiting_for == "the next event"
    assert bounds.next_read(108.5) == 1.5
    assert bounds.waiting_for == "stream_max_duration reached" and bounds.shown == 10
    err = bounds.timed_out(a_call())
    assert err.kind.name == "BackendTimeoutError" and "stream_max_duration" in err.message


# ------------------------------------------------------------------ the driver, a list sink

class ListSink:
    each_event = False
    answers_early_drain = True

    def __init__(self) -> None:
        self.opened = False
        self.framed: list[tuple[str, bool]] = []
        self.written: list[list[tuple[str, bool]]] = []
        self.end: str | None = None

    def frame(self, item: pb.StreamResponse, final: bool) -> None:
        self.framed.append((describe([item])[0], final))

    def sent(self) -> list[tuple[str, bool]]:
        """What was written, in order (the writes' grouping follows the turns)."""
        return [each for write in self.written for each in write]

    async def flush(self, due: bool) -> None:
        if self.framed:
            self.opened = True
            self.written.append(self.framed[:])
            self.framed.clear()

    async def fail(self, err: A2AError) -> None:
        self.end = f"error {err.kind.name}" + ("" if self.opened else " before the first")

    async def finish(self) -> None:
        self.end = "end"

    def drop(self) -> None:
        self.end = "dropped"

    def result(self) -> str | None:
        return self.end


def plan(call: Call, reads: EventBatches, backend: TaskTable | None = None,
         ) -> AsyncIterator[StreamPlan]:
    @asynccontextmanager
    async def opening() -> AsyncIterator[StreamPlan]:
        filters = [SettledEnd(backend, call)] if backend else []  # type: ignore[arg-type]
        config = BackendConfig(url="http://127.0.0.1:1/", version="0.3")
        yield StreamPlan(reads, Chain([*filters, Counted(call, no_index())]),
            Bounds(config, asyncio.get_running_loop().time()),
            FinalFlags() if call.ctx.client_version == "0.3" else None, None)
    return opening()  # type: ignore[return-value]


def lazily(*items: pb.StreamResponse, fail_at: int = -1) -> Iterator[pb.StreamResponse]:
    """A read decoded as its events are taken; ``fail_at``: the one that does not decode."""
    for at, item in enumerate(items):
        if at == fail_at:
            raise a2a_error("InvalidAgentResponseError", "unreadable")
        yield item


async def test_the_driver_frames_flags_and_ends_a_v03_client_s_stream() -> None:
    call = a_call(client="0.3")
    sink = ListSink()
    backend = TaskTable(a_task(COMPLETED))
    reads = reads_of([status(WORKING), chunk("a")], [status(WORKING)])
    await drive(call, plan(call, reads, backend), sink, None, "JSONRPC")  # type: ignore[arg-type]
    # The backend closed after a working status: the task's end is read and sent.
    assert sink.sent() == [("TASK_STATE_WORKING", False), ("a", False),
                           ("TASK_STATE_WORKING", False), ("TASK_STATE_COMPLETED", True)]
    assert sink.end == "end" and call.ctx.outcome.events == 4


async def test_the_driver_sends_an_unended_last_status_again_marked_final() -> None:
    call = a_call(client="0.3")
    sink = ListSink()
    reads = reads_of([chunk("a"), status(WORKING)])
    await drive(call, plan(call, reads), sink, None, "JSONRPC")  # type: ignore[arg-type]
    assert sink.sent() == [("a", False), ("TASK_STATE_WORKING", False),
                           ("TASK_STATE_WORKING", True)]


async def test_an_event_that_does_not_decode_ends_the_stream_after_the_ones_before() -> None:
    call = a_call()
    sink = ListSink()
    reads = reads_of(lazily(chunk("a"), chunk("b"), fail_at=1))  # type: ignore[arg-type]
    await drive(call, plan(call, reads), sink, None, "JSONRPC")  # type: ignore[arg-type]
    assert sink.sent() == [("a", False)]
    assert sink.end == "error InvalidAgentResponseError"
    assert call.ctx.outcome.backend_error == "INVALID_AGENT_RESPONSE"


async def test_an_error_before_the_first_event_is_answered_as_such() -> None:
    call = a_call()
    sink = ListSink()
    reads = reads_of(lazily(chunk("a"), fail_at=0))  # type: ignore[arg-type]
    await drive(call, plan(call, reads), sink, None, "JSONRPC")  # type: ignore[arg-type]
    assert sink.written == [] and sink.end == "error InvalidAgentResponseError before the first"


async def test_a_silent_backend_ends_in_backend_timeout_and_its_stream_is_closed() -> None:
    call = a_call()
    sink = ListSink()
    closed: list[str] = []
    reads = reads_of([chunk("a")], closed=closed, pause=5.0)

    @asynccontextmanager
    async def opening() -> AsyncIterator[StreamPlan]:
        config = BackendConfig(url="http://127.0.0.1:1/", version="0.3",
                               first_event_timeout=0.05)
        yield StreamPlan(reads, Chain([]), Bounds(config, asyncio.get_running_loop().time()),
                         None, None)

    await drive(call, opening(), sink, None, "JSONRPC")
    assert sink.end == "error BackendTimeoutError before the first"
    assert call.ctx.outcome.backend_error == "BACKEND_TIMEOUT"
    assert closed == ["closed"]


class StuckSink(ListSink):
    """A client that stopped reading: its writes never complete."""

    async def flush(self, due: bool) -> None:
        if self.framed:
            self.opened = True
            await asyncio.sleep(3600)


async def test_a_client_that_stops_reading_is_dropped_and_the_backend_stream_closed() -> None:
    call = a_call()
    sink = StuckSink()
    closed: list[str] = []
    reads = reads_of([chunk("a")], [chunk("b")], closed=closed)
    await asyncio.wait_for(drive(call, plan(call, reads), sink, None, "JSONRPC",
                                 write_timeout=0.05), 10)  # type: ignore[arg-type]
    assert sink.end == "dropped" and closed == ["closed"]
    assert call.ctx.outcome.backend_error is None  # not the backend's doing


async def test_a_timeout_while_the_stream_opens_is_answered_not_dropped() -> None:
    call = a_call()
    sink = ListSink()

    @asynccontextmanager
    async def opening() -> AsyncIterator[StreamPlan]:
        raise TimeoutError("the state store did not answer")
        yield  # pragma: no cover

    await drive(call, opening(), sink, None, "JSONRPC", write_timeout=0.05)
    assert sink.end == "error InternalError before the first"


async def test_stream_max_duration_ends_a_stream_whose_reads_are_always_ready() -> None:
    """A backend whose reads never wait (its events already buffered) and a client that
    takes each at once: the bound's timer only ever ran between two reads, when nothing
    was armed, and the stream went on past stream_max_duration (the fault matrix's
    endless SSE behind a gRPC client)."""
    call = a_call()
    sink = ListSink()
    cap = 20_000

    async def ready() -> AsyncIterator[Sequence[pb.StreamResponse]]:
        for _ in range(cap):
            yield [chunk("x")]

    @asynccontextmanager
    async def opening() -> AsyncIterator[StreamPlan]:
        config = BackendConfig(url="http://127.0.0.1:1/", version="1.0",
                               stream_max_duration=0.05)
        yield StreamPlan(ready(), Chain([Counted(call, no_index())]),
                         Bounds(config, asyncio.get_running_loop().time()), None, None)

    await asyncio.wait_for(drive(call, opening(), sink, None, "JSONRPC"), 60)
    assert sink.end == "error BackendTimeoutError"
    assert call.ctx.outcome.events < cap
