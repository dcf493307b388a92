"""Re-attaching a broken backend stream (gateway/streams/reattach.py) on a real SQLite
journal, with scripted backend reads and a sleep that only records: when the gateway
subscribes again, how often, after which waits, and what the client gets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.config.state import JournalConfig
from gateway.egress.base import BackendGone, EventBatches
from gateway.observability.metrics import REATTACHES
from gateway.state.sqlite_store import SqliteStore
from gateway.streams.journal import StreamJournal
from gateway.streams.reattach import Backoff, reattaching
from translators.errors import BY_NAME, A2AError, a2a_error
from translators.resume_marks import GAP_KEY

W, DONE = pb.TaskState.TASK_STATE_WORKING, pb.TaskState.TASK_STATE_COMPLETED
ASKING = pb.TaskState.TASK_STATE_INPUT_REQUIRED


def chunk(i: int) -> pb.StreamResponse:
    return pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id="t1", context_id="c", append=i > 0, artifact=pb.Artifact(
            artifact_id="a", parts=[pb.Part(text=f"chunk {i}")])))


def status(state: int) -> pb.StreamResponse:
    return pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t1", context_id="c", status=pb.TaskStatus(state=state)))  # type: ignore[arg-type]


def task(state: int, parts: int) -> pb.Task:
    return pb.Task(id="t1", context_id="c", status=pb.TaskStatus(state=state),  # type: ignore[arg-type]
                   artifacts=[pb.Artifact(artifact_id="a", parts=[
                       pb.Part(text=f"chunk {i}") for i in range(parts)])])


def gone() -> BackendGone:
    return BackendGone(BY_NAME["BackendUnavailableError"], "reset")


async def reads(*batches: Iterable[pb.StreamResponse],
                then: Exception | None = None) -> EventBatches:
    for batch in batches:
        yield batch
    if then is not None:
        raise then


class Upstream:
    """The backend's subscribe, scripted: each call takes the next script (the last one
    is repeated), and which task it was for is kept."""

    def __init__(self, *scripts: tuple[list[list[pb.StreamResponse]], Exception | None]) -> None:
        self.scripts = list(scripts)
        self.asked: list[str] = []

    def __call__(self, task_id: str) -> EventBatches:
        self.asked.append(task_id)
        batches, then = self.scripts.pop(0) if len(self.scripts) > 1 else self.scripts[0]
        return reads(*batches, then=then)


class Clock:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def named(item: pb.StreamResponse) -> str:
    kind = item.WhichOneof("payload")
    if kind == "artifact_update":
        return item.artifact_update.artifact.parts[0].text
    if kind == "status_update":
        return pb.TaskState.Name(item.status_update.status.state)
    return "gap" if kind == "task" and GAP_KEY in item.task.metadata else kind or ""


async def client(journal: StreamJournal, source: EventBatches) -> list[str]:
    """What the client gets, as the driver serves it: each read journaled before the
    next one is asked for."""
    got: list[str] = []
    async for batch in source:
        got.extend(named(item) for item, _ in await journal.record(list(batch)))
    return got


@pytest.fixture
async def journal(tmp_path: Path) -> AsyncIterator[StreamJournal]:
    store = SqliteStore(str(tmp_path / "state.db"))
    yield StreamJournal(store, "ten", JournalConfig())
    await store.close()


def counted(outcome: str) -> float:
    return REATTACHES.labels(outcome)._value.get()  # type: ignore[no-any-return]


BACKOFF = Backoff(attempts=3, first=0.25, most=2.0)


async def no_task(task_id: str) -> pb.Task:
    raise AssertionError("the task was not to be read")


def test_the_first_attempt_is_at_once_then_the_waits_double_up_to_the_most() -> None:
    assert [Backoff(6, 0.25, 1.0).delay(n) for n in range(6)] == [0.0, 0.25, 0.5, 1.0, 1.0, 1.0]
    assert Backoff.of(JournalConfig()) == Backoff(3, 0.25, 2.0)


async def test_a_stream_cut_mid_task_goes_on_from_the_subscribe_without_repeats(
        journal: StreamJournal) -> None:
    clock, before = Clock(), counted("reattached")
    # A v1.0 subscribe: the Task the client has all of, the event in flight again, then on.
    upstream = Upstream(([[pb.StreamResponse(task=task(W, 2))], [chunk(1), chunk(2)],
                          [status(DONE)]], None))
    got = await client(journal, reattaching(
        journal, reads([status(W), chunk(0)], [chunk(1)], then=gone()), upstream, no_task,
        BACKOFF, clock.sleep))
    assert got == ["TASK_STATE_WORKING", "chunk 0", "chunk 1", "chunk 2", "TASK_STATE_COMPLETED"]
    assert upstream.asked == ["t1"] and clock.waits == [0.0]
    assert counted("reattached") == before + 1


async def test_a_stream_closed_before_its_task_ended_is_subscribed_to_again(
        journal: StreamJournal) -> None:
    upstream = Upstream(([[chunk(1)], [status(DONE)]], None))
    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)]), upstream,
                                            no_task, BACKOFF, Clock().sleep))
    assert got == ["TASK_STATE_WORKING", "chunk 0", "chunk 1", "TASK_STATE_COMPLETED"]


async def test_a_backend_that_stays_away_gets_bounded_attempts_then_a_clean_end(
        journal: StreamJournal) -> None:
    clock, before = Clock(), counted("gave_up")
    upstream = Upstream(([], gone()))
    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)], then=gone()),
                                            upstream, no_task, BACKOFF, clock.sleep))
    assert got == ["TASK_STATE_WORKING", "chunk 0"]  # and no error: the ids resume it
    assert len(upstream.asked) == 3 and clock.waits == [0.0, 0.25, 0.5]
    assert counted("gave_up") == before + 1


async def test_a_subscribe_that_gives_nothing_new_counts_as_a_failed_attempt(
        journal: StreamJournal) -> None:
    clock = Clock()  # the Task the client has, then closed: no busy loop, a bounded one
    upstream = Upstream(([[pb.StreamResponse(task=task(W, 1))]], None))
    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)], then=gone()),
                                            upstream, no_task, BACKOFF, clock.sleep))
    assert got == ["TASK_STATE_WORKING", "chunk 0"]
    assert len(upstream.asked) == 3 and clock.waits == [0.0, 0.25, 0.5]


async def test_each_attempt_that_brings_something_new_starts_the_count_again(
        journal: StreamJournal) -> None:
    clock = Clock()
    breaks = [([[chunk(i)]], gone()) for i in range(1, 6)]
    upstream = Upstream(*breaks, ([[chunk(6)], [status(DONE)]], None))
    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)], then=gone()),
                                            upstream, no_task, BACKOFF, clock.sleep))
    assert got == ["TASK_STATE_WORKING", *(f"chunk {i}" for i in range(7)),
                   "TASK_STATE_COMPLETED"]
    assert clock.waits == [0.0] * 6


@pytest.mark.parametrize("last", [DONE, ASKING], ids=["ended", "waiting-for-its-client"])
async def test_a_stream_whose_task_ended_or_waits_is_not_subscribed_to_again(
        journal: StreamJournal, last: int) -> None:
    upstream = Upstream(([], None))
    got = await client(journal, reattaching(journal, reads([status(W)], [status(last)]),
                                            upstream, no_task, BACKOFF, Clock().sleep))
    assert got == ["TASK_STATE_WORKING", pb.TaskState.Name(last)]  # type: ignore[arg-type]
    assert upstream.asked == []


async def test_the_backends_own_error_ends_the_stream_as_before(
        journal: StreamJournal) -> None:
    upstream = Upstream(([], None))
    refusal = a2a_error("InternalError", "the agent failed")
    with pytest.raises(A2AError) as raised:
        await client(journal, reattaching(journal, reads([status(W)], then=refusal),
                                          upstream, no_task, BACKOFF, Clock().sleep))
    assert raised.value is refusal and upstream.asked == []


async def test_a_stream_of_no_task_is_not_subscribed_to(journal: StreamJournal) -> None:
    upstream = Upstream(([], None))
    reply = pb.StreamResponse(message=pb.Message(message_id="m", role=pb.Role.ROLE_AGENT))
    with pytest.raises(BackendGone):
        await client(journal, reattaching(journal, reads([reply], then=gone()), upstream,
                                          no_task, BACKOFF, Clock().sleep))
    assert upstream.asked == []


@pytest.mark.parametrize(("now", "expected"), [
    (task(DONE, 1), ["TASK_STATE_COMPLETED"]),  # all it lacks is the end
    (task(DONE, 3), ["gap"]),  # it lacks chunks too: the task, marked as a gap
    (task(W, 1), []),  # nothing it lacks
])
async def test_a_refused_subscribe_ends_with_what_the_client_lacks_of_the_task(
        journal: StreamJournal, now: pb.Task, expected: list[str]) -> None:
    before = counted("refused")
    upstream = Upstream(([], a2a_error("UnsupportedOperationError", "terminal")))

    async def current(task_id: str) -> pb.Task:
        assert task_id == "t1"
        return now

    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)], then=gone()),
                                            upstream, current, BACKOFF, Clock().sleep))
    assert got == ["TASK_STATE_WORKING", "chunk 0", *expected]
    assert counted("refused") == before + 1


async def test_a_v03_client_gets_what_it_lacks_as_whole_artifacts_then_the_status(
        journal: StreamJournal) -> None:
    """Its SDK takes one Task per stream and refuses a second ("Task is already set"):
    the chunks it lacks come as the whole artifact, replacing its copy, then the end."""
    upstream = Upstream(([], a2a_error("UnsupportedOperationError", "terminal")))

    async def current(task_id: str) -> pb.Task:
        return task(DONE, 3)

    got: list[pb.StreamResponse] = []
    async for batch in reattaching(journal, reads([status(W), chunk(0)], then=gone()),
                                   upstream, current, BACKOFF, Clock().sleep,
                                   whole_task=False):
        got.extend(item for item, _ in await journal.record(list(batch)))
    assert [item.WhichOneof("payload") for item in got] == [
        "status_update", "artifact_update", "artifact_update", "status_update"]
    whole = got[2].artifact_update
    assert (whole.append, whole.last_chunk) == (False, True)
    assert [part.text for part in whole.artifact.parts] == ["chunk 0", "chunk 1", "chunk 2"]
    assert got[3].status_update.status.state == DONE


async def test_a_clean_end_is_not_a_break_for_a_v03_backend(journal: StreamJournal) -> None:
    """A v0.3 agent closes its stream before its final status as a rule (a2a-sdk
    0.3.26's gRPC agent): that end is settled by a GetTask (SettledEnd), not subscribed
    to again; a broken connection still is."""
    upstream = Upstream(([[chunk(1)], [status(DONE)]], None))
    got = await client(journal, reattaching(journal, reads([status(W), chunk(0)]), upstream,
                                            no_task, BACKOFF, Clock().sleep,
                                            clean_end_breaks=False))
    assert got == ["TASK_STATE_WORKING", "chunk 0"] and upstream.asked == []
    got = await client(journal, reattaching(journal, reads([chunk(1)], then=gone()),
                                            upstream, no_task, BACKOFF, Clock().sleep,
                                            clean_end_breaks=False))
    assert upstream.asked == ["t1"] and got[-1] == "TASK_STATE_COMPLETED"
