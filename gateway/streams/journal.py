"""A stream's journal (docs/streams.md, "Resuming a stream"): every event the gateway
forwards on a stream is appended to its task's journal in the state store before it is
written, and goes out with an id naming the task and its place there (an SSE `id:`; for
gRPC clients, gateway/ingress/grpc.py). A client that reconnects with `Last-Event-ID`
(gRPC: `last-event-id` metadata) gets what the journal holds after that id, then the
backend's live events (the gateway subscribes again upstream); a client whose id the
journal no longer holds gets the task's current state, marked as a gap.

The store numbers a task's events, and an event equal to one journaled after the
writer's position is that one (gateway/state/journal.py): two streams of one task write
one journal, and what a resumed stream reads again is not journaled twice. Here,
per stream, :class:`StreamJournal` turns the store's numbers into what the client gets:
each event once, in the journal's order, including the events another stream of the
same task journaled in between (a client's stream that it left, which the gateway keeps
reading for `state.journal.hold` seconds).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import structlog
from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.state import JournalConfig
from gateway.egress.base import EventBatches
from gateway.observability.metrics import GAPS, JOURNAL_FAILURES, RESUMED_EVENTS, RESUMES
from gateway.state import StoreError
from gateway.state.journal import JournalEntry, JournalStore, limits_of
from gateway.streams.events import close_stream
from gateway.tasks.index import task_of as task_named
from translators.errors import a2a_error
from translators.resume_marks import marked_as_gap
from translators.vocabulary import ends_task
from translators.webhooks import event_task_id

log = structlog.get_logger("a2a_gateway.streams")


Framed = list[tuple[pb.StreamResponse, str | None]]  # events and their ids
TAIL = 64  # journal entries a resumed stream's first upstream event is looked for among
# How long a resumed stream waits for the journal's next entry while the journal holds
# less than the backend's Task, before it sends the Task as a gap (StreamJournal.
# _caught_up), polling the store.
CATCH_UP = 1.0
CATCH_UP_POLL = 0.02


def cursor(task_id: str, seq: int) -> str:
    """The id of a task's ``seq``-th journaled event: opaque to clients."""
    raw = f"{seq}:{task_id}".encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def read_cursor(text: str | None) -> tuple[str, int] | None:
    """The task and seq an id names; None for anything this gateway did not make."""
    if not text or len(text) > 2048:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        seq, _, task_id = raw.partition(":")
        number = int(seq)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if number < 0 or not task_id:
        return None
    return task_id, number


class StreamJournal:
    """One stream's side of its task's journal. Events of no task (a plain Message
    answer) are neither journaled nor given an id."""

    __slots__ = ("after", "batch", "broken", "config", "gap", "last_state", "limits", "parts", "realign", "resumed",
                 "sent", "store", "tail", "task_id", "tenant", "terminal")

    def __init__(self, store: JournalStore, tenant: str, config: JournalConfig,
                 resume: tuple[str, int] | None = None) -> None:
        self.store, self.tenant, self.config = store, tenant, config
        self.limits = limits_of(config)
        self.batch = config.replay_batch
        self.task_id = resume[0] if resume is not None else ""
        # The highest seq the client has; -1 until the stream's first journaled event
        # sets it (a new stream starts where the journal is, not at its beginning).
        self.sent = resume[1] if resume is not None else -1
        self.resumed = resume is not None
        # Where this stream is in the journal as a writer: the seq of the last event its
        # backend sent (the store matches equal events after it: the same event another
        # stream of the task journaled first). None until the first append.
        self.after: int | None = resume[1] if resume is not None else None
        # A backend subscribed to again may begin with events the journal holds (the one
        # in flight when the old stream stopped): its first event is looked for among the
        # journal's last entries up to here (bytes -> seq), and the position set before it.
        self.tail: dict[bytes, int] = {}
        self.realign = False
        self.gap = False  # the journal could not continue from the client's id
        self.terminal = False  # the journal's task has ended
        self.broken = False  # the store failed: the rest of the stream goes without ids
        # What the client has of the task (see snapshot()): the state it last got, and
        # the parts of each artifact.
        self.last_state = -1
        self.parts: dict[str, int] = {}

    async def record(self, items: Sequence[pb.StreamResponse]) -> Framed:
        """``items`` journaled, as the client gets them: each with its id, in the
        journal's order, the ones it has already left out, the ones another stream of
        the task journaled in between put in."""
        if self.broken:
            return [(item, None) for item in items]
        framed: Framed = []
        if self.realign and items and items[0].HasField("task"):
            # The Task a subscribe begins with: first what the journal got meanwhile,
            # then the Task only if it still holds something the client lacks.
            framed = await self._caught_up(items[0])
            snap = self.snapshot(items[0])
            items = [*([snap] if snap is not None else []), *items[1:]]
        datas: list[bytes] = []
        ours: list[bool] = []
        kept: list[pb.StreamResponse] = []
        terminal = False
        for item in items:
            task_id = event_task_id(item)
            if task_id and not self.task_id:
                self.task_id = task_id
            mine = bool(task_id) and task_id == self.task_id
            if mine:
                data = item.SerializeToString(deterministic=True)
                if self.realign and self._repeated(item, data):
                    continue
                datas.append(data)
                terminal = terminal or ends_task(item)
            ours.append(mine)
            kept.append(item)
        items = kept
        if not datas:
            return [*framed, *((item, None) for item in items)]
        try:
            seqs = await self.store.journal_append(self.tenant, self.task_id, datas,
                                                   terminal, self.limits, self.after)
        except StoreError as exc:
            self._broke(exc)
            return [*framed, *((item, None) for item in items)]
        self.terminal = self.terminal or terminal
        self.after = seqs[-1]
        numbers = iter(seqs)
        for item, mine in zip(items, ours, strict=True):
            if not mine:
                framed.append((item, None))
                continue
            seq = next(numbers)
            if self.sent < 0:
                self.sent = seq - 1
            if seq <= self.sent:
                continue  # the client has it already
            if seq > self.sent + 1 and self.resumed:
                # Only a resumed stream looks for what another stream of its task wrote
                # (the one its client left, read on): a new stream's events are its own.
                framed.extend(await self._between(seq - 1))
            framed.append((item, self._sent(item, seq)))
        return framed

    def _sent(self, item: pb.StreamResponse, seq: int) -> str:
        self.sent = seq
        self._saw(item)
        return cursor(self.task_id, seq)

    def _saw(self, item: pb.StreamResponse) -> None:
        kind = item.WhichOneof("payload")
        if kind == "status_update":
            self.last_state = item.status_update.status.state
        elif kind == "artifact_update":
            update = item.artifact_update
            name, count = update.artifact.artifact_id, len(update.artifact.parts)
            self.parts[name] = self.parts.get(name, 0) + count if update.append else count
        elif kind == "task":
            self.last_state = item.task.status.state
            for artifact in item.task.artifacts:
                self.parts[artifact.artifact_id] = len(artifact.parts)

    async def _between(self, upto: int | None) -> Framed:
        """The events another stream journaled after the client's last one, up to
        ``upto`` (None: all there are): the client gets them first, in order."""
        framed: Framed = []
        while upto is None or self.sent < upto:
            limit = self.batch if upto is None else min(self.batch, upto - self.sent)
            try:
                read = await self.store.journal_read(self.tenant, self.task_id, self.sent,
                                                     limit)
            except StoreError as exc:
                self._broke(exc)
                break
            entries = [e for e in read.entries if upto is None or e.seq <= upto]
            if not entries:
                break
            self._keep_tail(entries)
            for entry in entries:
                item = pb.StreamResponse.FromString(entry.data)
                framed.append((item, self._sent(item, entry.seq)))
        if upto is not None:
            self.sent = max(self.sent, upto)
        return framed

    async def _caught_up(self, item: pb.StreamResponse) -> Framed:
        """What the journal got after the client's last event, once it holds what the
        backend's Task does, or once CATCH_UP seconds have passed without a new entry.
        The backend's Task may be ahead of the journal by the events on their way to a
        stream another gateway still reads into it (a drained replica's, or one whose
        client left; a busy one is seconds behind its backend): while they come, they
        come as events, instead of a gap's snapshot."""
        framed = await self._between(None)
        if self.gap:
            return framed
        loop = asyncio.get_running_loop()
        until = loop.time() + CATCH_UP
        while (not self._has_all(item.task) and not self.broken
               and loop.time() < until):
            await asyncio.sleep(CATCH_UP_POLL)
            more = await self._between(None)
            if more:
                until = loop.time() + CATCH_UP
                framed += more
        return framed

    def _broke(self, exc: StoreError) -> None:
        self.broken = True
        JOURNAL_FAILURES.inc()
        log.warning("stream journal unavailable: the stream goes on without ids",
                    task_id=self.task_id[:64], error=str(exc))

    async def replay(self) -> AsyncIterator[list[pb.StreamResponse]]:
        """A resumed stream's journaled events after the client's id, in batches (they
        are journaled again on their way out, which gives back their own ids). Sets
        :attr:`gap` when the journal cannot continue from that id."""
        after = self.sent
        replayed = 0
        await self._state_at(after)
        while True:
            try:
                read = await self.store.journal_read(self.tenant, self.task_id, after,
                                                     self.batch)
            except StoreError as exc:
                self._broke(exc)
                self.gap = True
                break
            if after == self.sent and read.lost_after(after):
                self.gap = True
                self.sent = read.last  # the snapshot stands for what was lost
                break
            self.terminal = read.terminal
            if not read.entries:
                break
            after = read.entries[-1].seq
            replayed += len(read.entries)
            self._keep_tail(read.entries)
            yield [pb.StreamResponse.FromString(entry.data) for entry in read.entries]
        RESUMES.labels("gap" if self.gap else "replayed").inc()
        RESUMED_EVENTS.inc(replayed)

    async def _state_at(self, seq: int) -> None:
        """What the client had of the task at its id, from the journal's entries up to
        it (those it still holds: without the oldest, the snapshot goes out)."""
        after = 0
        while after < seq:
            try:
                read = await self.store.journal_read(self.tenant, self.task_id, after,
                                                     min(self.batch, seq - after))
            except StoreError:
                return  # replay() meets the same failure and says so
            if not read.entries:
                return
            kept = [entry for entry in read.entries if entry.seq <= seq]
            for entry in kept:
                self._saw(pb.StreamResponse.FromString(entry.data))
            self._keep_tail(kept)
            after = read.entries[-1].seq

    async def rejoin(self) -> None:
        """Before the backend is subscribed to again mid-stream (its stream broke,
        gateway/streams/reattach.py): what it sends first is realigned as a resumed
        stream's is, against the journal's last entries up to the client's last."""
        self.realign = True
        try:
            read = await self.store.journal_read(self.tenant, self.task_id,
                                                 max(0, self.sent - TAIL), TAIL)
        except StoreError as exc:
            self._broke(exc)
            return
        self._keep_tail([entry for entry in read.entries if entry.seq <= self.sent])

    def _repeated(self, item: pb.StreamResponse, data: bytes) -> bool:
        """Whether a resumed stream's upstream event repeats one the client has (a
        backend subscribed to again may begin with the events in flight when the old
        stream stopped): looked for among the journal's last entries up to the client's
        last, until the first event that is not there (the Task it begins with aside)."""
        if item.HasField("task"):
            return False
        seen = self.tail.get(data)
        if seen is not None and seen <= self.sent:
            return True
        self.realign = False
        return False

    def _keep_tail(self, entries: Sequence[JournalEntry]) -> None:
        tail = self.tail
        for entry in entries:
            tail.pop(entry.data, None)  # the latest seq of equal bytes, last in order
            tail[entry.data] = entry.seq
        while len(tail) > TAIL:
            del tail[next(iter(tail))]

    def snapshot(self, item: pb.StreamResponse) -> pb.StreamResponse | None:
        """What becomes of the Task a resumed stream's upstream subscribe starts with:
        nothing when it holds nothing the client lacks (the state it last got, no part
        of an artifact it has not had: the journal has told it all), else the Task
        marked as a gap (the client missed what changed it)."""
        if not self.gap and self._has_all(item.task):
            return None
        GAPS.labels("journal" if self.gap else "unseen").inc()
        return marked_as_gap(item, "the journal no longer holds the events after the "
                             "client's id" if self.gap
                             else "events the gateway did not see (no stream held them)")

    def _has_all(self, task: pb.Task) -> bool:
        """Whether the client has had all of ``task``: its state, its artifacts."""
        return task.status.state == self.last_state and self.has_artifacts(task)

    def has_artifacts(self, task: pb.Task) -> bool:
        """Whether the client has had every part of ``task``'s artifacts."""
        return all(len(artifact.parts) <= self.parts.get(artifact.artifact_id, -1)
                   for artifact in task.artifacts)


async def resumed_reads(journal: StreamJournal, check: Callable[[], Awaitable[None] | None],
                        subscribe: Callable[[bool], EventBatches]) -> EventBatches:
    """A resumed stream's reads: the journal after the client's id, then (unless the
    task has ended) the backend's subscribe, whose leading Task is kept only as a gap's
    snapshot (:meth:`StreamJournal.snapshot`). ``check``: the ownership check of a
    retried stream call that resumes its task (a subscribe's own stages made it);
    ``subscribe(gap)``: the backend's subscribe."""
    upstream: EventBatches | None = None
    try:
        waiting = check()
        if waiting is not None:
            await waiting
        async for replayed in journal.replay():
            yield replayed
        if journal.terminal and not journal.gap:
            return
        journal.realign = True  # its Task and its first events: StreamJournal.record
        upstream = subscribe(journal.gap)
        async for events in upstream:
            yield events
    finally:
        if upstream is not None:
            await close_stream(upstream)


class Journals:
    """Each stream's journal, from the state store and `state.journal`; none without a
    store, or with the journal off."""

    __slots__ = ("config", "store")

    def __init__(self, store: JournalStore | None, config: JournalConfig) -> None:
        self.store = store if config.enabled else None
        self.config = config

    def open(self, call: Call) -> StreamJournal | None:
        """The call's journal, resuming from the client's `Last-Event-ID` (gRPC:
        `last-event-id` metadata) when it names one (InvalidParamsError for an id this
        gateway did not make, or one of another task than the subscribe's)."""
        if self.store is None:
            return None
        text = call.ctx.facts.resume_from
        if not text:
            return StreamJournal(self.store, call.ctx.tenant or "", self.config)
        resume = read_cursor(text)
        if resume is None:
            raise a2a_error("InvalidParamsError", "Last-Event-ID was not made by this "
                            "gateway (the id of one of its stream events is expected)")
        named = task_named(call)
        if named and named != resume[0]:
            raise a2a_error("InvalidParamsError", f"Last-Event-ID names task "
                            f"{resume[0][:64]!r}, not {named[:64]!r}")
        return StreamJournal(self.store, call.ctx.tenant or "", self.config, resume)
