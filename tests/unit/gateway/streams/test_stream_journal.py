"""The stream side of the journal (gateway/streams/journal.py) on a real SQLite store:
ids, what a client gets once and in order, resume, gaps, and the snapshot rule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.config.state import JournalConfig
from gateway.observability.metrics import GAPS
from gateway.state.sqlite_store import SqliteStore
from gateway.streams.journal import (
    StreamJournal,
    cursor,
    read_cursor,
    resumed_reads,
)
from tests.support.waiting import wait_until
from translators.resume_marks import GAP_KEY

W, DONE = pb.TaskState.TASK_STATE_WORKING, pb.TaskState.TASK_STATE_COMPLETED


def chunk(i: int, task: str = "t1") -> pb.StreamResponse:
    return pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id=task, context_id="c", artifact=pb.Artifact(
            artifact_id="a", parts=[pb.Part(text=f"chunk {i}")])))


def status(state: int, task: str = "t1") -> pb.StreamResponse:
    return pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id=task, context_id="c", status=pb.TaskStatus(state=state)))  # type: ignore[arg-type]


def texts(framed: list[tuple[pb.StreamResponse, str | None]]) -> list[str]:
    out = []
    for item, _ in framed:
        if item.HasField("artifact_update"):
            out.append(item.artifact_update.artifact.parts[0].text)
        elif item.HasField("status_update"):
            out.append(pb.TaskState.Name(item.status_update.status.state))
        else:
            out.append(item.WhichOneof("payload") or "")
    return out


def gap_count(reason: str) -> float:
    return GAPS.labels(reason)._value.get()  # type: ignore[attr-defined, no-any-return]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore(str(tmp_path / "state.db"))
    yield store
    await store.close()


def test_a_cursor_names_its_task_and_place_and_nothing_else_reads_as_one() -> None:
    assert read_cursor(cursor("task:with:colons", 42)) == ("task:with:colons", 42)
    for bad in ("", "!!", "bm90LWEtbnVtYmVy", cursor("", 3), "x" * 5000):
        assert read_cursor(bad) is None


async def test_each_event_gets_the_next_id_and_an_event_sent_twice_goes_out_twice(
        store: SqliteStore) -> None:
    journal = StreamJournal(store, "ten", JournalConfig())
    first = await journal.record([status(W), chunk(0)])
    assert [read_cursor(i) for _, i in first] == [("t1", 1), ("t1", 2)]
    again = await journal.record([chunk(0), status(W)])  # the agent said it again
    assert texts(again) == ["chunk 0", "TASK_STATE_WORKING"]
    assert [read_cursor(i) for _, i in again] == [("t1", 3), ("t1", 4)]


async def test_a_message_of_no_task_goes_out_without_an_id(store: SqliteStore) -> None:
    journal = StreamJournal(store, "ten", JournalConfig())
    reply = pb.StreamResponse(message=pb.Message(message_id="m", role=pb.Role.ROLE_AGENT))
    assert await journal.record([reply]) == [(reply, None)]


async def test_two_streams_of_a_task_write_one_journal(store: SqliteStore) -> None:
    mine = StreamJournal(store, "ten", JournalConfig())
    await mine.record([status(W)])
    other = StreamJournal(store, "ten", JournalConfig(), ("t1", 1))  # resumed beside it
    await other.record([chunk(0), chunk(0)])
    framed = await mine.record([chunk(0), chunk(0), chunk(1)])
    assert texts(framed) == ["chunk 0", "chunk 0", "chunk 1"]
    assert [read_cursor(i)[1] for _, i in framed if i] == [2, 3, 4]  # type: ignore[index]


async def test_a_resumed_stream_gets_first_what_the_held_stream_journaled_in_order(
        store: SqliteStore) -> None:
    held = StreamJournal(store, "ten", JournalConfig())
    await held.record([status(W)])
    back = StreamJournal(store, "ten", JournalConfig(), ("t1", 1))
    await held.record([chunk(0), chunk(1)])  # what back's backend never sends it
    framed = await back.record([chunk(2)])
    assert texts(framed) == ["chunk 0", "chunk 1", "chunk 2"]
    assert [read_cursor(i)[1] for _, i in framed if i] == [2, 3, 4]  # type: ignore[index]


async def test_a_new_stream_of_a_task_gets_only_its_own_events(store: SqliteStore) -> None:
    """Two new streams naming one task (a backend that reuses ids, say) do not mix."""
    one, two = (StreamJournal(store, "ten", JournalConfig()) for _ in range(2))
    await one.record([status(W)])
    await two.record([chunk(7)])
    assert texts(await one.record([chunk(0)])) == ["chunk 0"]


async def test_a_resumed_stream_replays_after_its_id_then_drops_the_current_snapshot(
        store: SqliteStore) -> None:
    live = StreamJournal(store, "ten", JournalConfig())
    sent = await live.record([status(W), chunk(0), chunk(1), chunk(2)])
    last_seen = sent[1][1]  # the client got the status and chunk 0
    resume = read_cursor(last_seen)
    assert resume is not None
    back = StreamJournal(store, "ten", JournalConfig(), resume)
    snapshot = pb.StreamResponse(task=pb.Task(id="t1", context_id="c",
                                              status=pb.TaskStatus(state=W)))

    async def upstream() -> AsyncIterator[list[pb.StreamResponse]]:
        yield [snapshot, chunk(3)]
        yield [status(DONE)]

    got = []
    async for batch in resumed_reads(back, lambda: None, lambda gap: upstream()):
        got.extend(await back.record(list(batch)))
    assert texts(got) == ["chunk 1", "chunk 2", "chunk 3", "TASK_STATE_COMPLETED"]
    assert [read_cursor(i)[1] for _, i in got] == [3, 4, 5, 6]  # type: ignore[index]
    assert back.terminal


async def test_an_id_the_journal_no_longer_holds_gets_the_task_marked_as_a_gap(
        store: SqliteStore) -> None:
    config = JournalConfig(max_events=2)
    live = StreamJournal(store, "ten", config)
    sent = await live.record([status(W), chunk(0), chunk(1), chunk(2)])
    resume = read_cursor(sent[0][1])
    assert resume is not None
    back = StreamJournal(store, "ten", config, resume)
    snapshot = pb.StreamResponse(task=pb.Task(id="t1", context_id="c",
                                              status=pb.TaskStatus(state=W)))

    async def upstream() -> AsyncIterator[list[pb.StreamResponse]]:
        yield [snapshot]

    gaps = gap_count("journal")
    got = []
    async for batch in resumed_reads(back, lambda: None, lambda gap: upstream()):
        got.extend(await back.record(list(batch)))
    assert back.gap and len(got) == 1
    task = got[0][0].task
    assert task.id == "t1" and "no longer holds" in task.metadata[GAP_KEY]["reason"]
    assert read_cursor(got[0][1]) == ("t1", 5)  # after everything the journal had
    assert gap_count("journal") == gaps + 1


async def test_a_snapshot_that_moved_while_nobody_read_is_a_gap_counted_as_unseen(
        store: SqliteStore) -> None:
    live = StreamJournal(store, "ten", JournalConfig())
    sent = await live.record([status(W), chunk(0)])
    resume = read_cursor(sent[1][1])
    assert resume is not None
    back = StreamJournal(store, "ten", JournalConfig(), resume)
    # The backend went on to completion while no gateway read its stream.
    moved = pb.StreamResponse(task=pb.Task(id="t1", context_id="c",
                                           status=pb.TaskStatus(state=DONE)))

    async def upstream() -> AsyncIterator[list[pb.StreamResponse]]:
        yield [moved]

    unseen, lost = gap_count("unseen"), gap_count("journal")
    got = []
    async for batch in resumed_reads(back, lambda: None, lambda gap: upstream()):
        got.extend(await back.record(list(batch)))
    assert not back.gap and len(got) == 1
    assert "did not see" in got[0][0].task.metadata[GAP_KEY]["reason"]
    assert (gap_count("unseen"), gap_count("journal")) == (unseen + 1, lost)


async def test_a_finished_task_is_replayed_without_subscribing_again(store: SqliteStore) -> None:
    live = StreamJournal(store, "ten", JournalConfig())
    sent = await live.record([status(W), chunk(0), status(DONE)])
    resume = read_cursor(sent[0][1])
    assert resume is not None
    back = StreamJournal(store, "ten", JournalConfig(), resume)
    opened = False

    async def upstream() -> AsyncIterator[list[pb.StreamResponse]]:
        nonlocal opened
        opened = True
        yield []

    got = []
    async for batch in resumed_reads(back, lambda: None, lambda gap: upstream()):
        got.extend(await back.record(list(batch)))
    assert texts(got) == ["chunk 0", "TASK_STATE_COMPLETED"] and not opened


async def test_tenants_do_not_share_a_journal(store: SqliteStore) -> None:
    a = StreamJournal(store, "a", JournalConfig())
    await a.record([status(W), chunk(0)])
    resume = ("t1", 0)
    other = StreamJournal(store, "b", JournalConfig(), resume)
    replayed = [item async for batch in other.replay() for item in batch]
    assert replayed == [] and other.gap is False


def appended(i: int) -> pb.StreamResponse:
    """Chunk ``i`` appended to artifact `a` (chunk 0 starts it)."""
    event = chunk(i)
    event.artifact_update.append = i > 0
    return event


async def _resumed_after_chunk_0(store: SqliteStore, live: StreamJournal,
                                 ) -> tuple[StreamJournal, asyncio.Task[list[Any]]]:
    """A client that got chunk 0 resumes while the backend's Task already holds chunks
    0-1 (chunk 1 on its way to ``live``, a stream another gateway still reads): the
    resumed stream's events, being served."""
    sent = await live.record([status(W), appended(0)])
    back = StreamJournal(store, "ten", JournalConfig(), read_cursor(sent[-1][1]))
    snapshot = pb.StreamResponse(task=pb.Task(
        id="t1", context_id="c", status=pb.TaskStatus(state=W), artifacts=[pb.Artifact(
            artifact_id="a", parts=[pb.Part(text="chunk 0"), pb.Part(text="chunk 1")])]))

    async def upstream() -> AsyncIterator[list[pb.StreamResponse]]:
        yield [snapshot]

    async def served() -> list[Any]:
        got = []
        async for batch in resumed_reads(back, lambda: None, lambda gap: upstream()):
            got.extend(await back.record(list(batch)))
        return got

    return back, asyncio.ensure_future(served())


async def test_a_task_ahead_of_the_journal_waits_for_the_stream_that_journals_it(
        store: SqliteStore) -> None:
    """A drained replica reads on what its client missed: the resumed stream on another
    one gets it as events, not as a gap's snapshot (StreamJournal._caught_up)."""
    live = StreamJournal(store, "ten", JournalConfig())
    back, serving = await _resumed_after_chunk_0(store, live)
    reads = _Reads(back)
    # Chunk 1 reaches the journal once the resumed stream has the Task and waits.
    await wait_until(lambda: reads.realigning >= 2, "the resumed stream waiting")
    await live.record([appended(1)])
    got = await asyncio.wait_for(serving, 10)
    assert texts(got) == ["chunk 1"] and not back.gap


class _Reads:
    """``journal``'s store, counting its reads once it has the backend's Task."""

    def __init__(self, journal: StreamJournal) -> None:
        self.store, self.journal, self.realigning = journal.store, journal, 0
        journal.store = self  # type: ignore[assignment]

    async def journal_read(self, *args: Any) -> Any:
        self.realigning += self.journal.realign
        return await self.store.journal_read(*args)

    async def journal_append(self, *args: Any) -> Any:
        return await self.store.journal_append(*args)


async def test_a_task_ahead_of_a_journal_nobody_writes_is_sent_as_a_gap(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.streams.journal.CATCH_UP", 0.05)
    live = StreamJournal(store, "ten", JournalConfig())
    _, serving = await _resumed_after_chunk_0(store, live)
    got = await asyncio.wait_for(serving, 10)
    assert texts(got) == ["task"]
    assert "did not see" in got[0][0].task.metadata[GAP_KEY]["reason"]
