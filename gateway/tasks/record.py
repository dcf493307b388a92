"""Writing the task index off the call's path, except for what a call creates.

A call or an event hands its observations to :class:`TaskRecorder` and goes on: they
wait in a bounded table, one entry per (tenant, task id) — a task seen again before it
was written is merged, not queued twice — and one background task writes them in
batches (it waits up to `linger` for a batch to fill: one write then carries many tasks).
When the table is full, an observation is dropped and counted; such a call never waits
for the store. Answers passed through as the backend sent them are read (only their
task fields) by the writer, not by the call.

A call that creates a task (or sends a message to one) is different: its owner must find
the task through any worker or replica as soon as it has the answer. It waits for its
records to be written (:meth:`TaskRecorder.write`, bounded by `write_timeout`): they join
the table like any other, and the writer stops lingering while someone waits, so every
call that waits at one moment shares one write (a group commit).

Where no other process reads the store (SQLite with one process: `retain`), a creating
call need not wait: readers in this process flush first, so they see it. Its records
must still never be lost, so a write that fails puts its batch back and is tried again
later (backing off), until the store takes it; the gateway meanwhile refuses new
creations (gateway/tasks/index.py) and readers' flushes give up after `write_timeout`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable
from itertools import islice
from typing import Any

import structlog

from gateway.observability.metrics import TASK_DROPS, TASK_RECORDS
from gateway.state import Store, StoreError, TaskRecord
from translators.task_facts import TaskFacts, document_facts, wire_facts

log = structlog.get_logger("a2a_gateway.task_index")


# What a passed-through answer leaves for the writer: (tenant, owner, backend, binding,
# version, operation, body, document, agent), the document being what the gateway read
# of the body (WireAnswer.document; None: it read nothing, the body is read). A tuple:
# one is made for every call.
WireItem = tuple[str, str | None, str, str, str, str, bytes, Any, str | None]


def records_of(tenant: str, owner: str | None, backend: str, facts: Iterable[TaskFacts],
               now: float, agent: str | None = None) -> list[TaskRecord]:
    """The records of the tasks an answer or event shows, seen now through ``backend``
    (of ``agent``, in a migration; a status without a timestamp counts as seen now)."""
    return [TaskRecord(tenant, task_id, context_id, state,
                       now if stamp is None else stamp, now if stamp is None else stamp,
                       owner, backend, agent)
            for task_id, context_id, state, stamp in facts]


def wire_records(item: WireItem, now: float) -> list[TaskRecord]:
    tenant, owner, backend, binding, version, op, body, document, agent = item
    facts = (wire_facts(binding, version, op, body) if document is None
             else document_facts(binding, version, op, document))
    return records_of(tenant, owner, backend, facts, now, agent) if facts else []


def merged(old: TaskRecord, new: TaskRecord) -> TaskRecord:
    """Two observations of one task, as the store would keep them (the newer status wins;
    the first creation time, owner and agent stay)."""
    newer = new if new.updated_at >= old.updated_at else old
    return TaskRecord(old.tenant, old.task_id, newer.context_id, newer.state,
                      min(old.created_at, new.created_at), newer.updated_at,
                      old.owner if old.owner is not None else new.owner, newer.backend,
                      old.agent if old.agent is not None else new.agent)


class TaskRecorder:
    def __init__(self, store: Store, capacity: int = 10_000, batch: int = 500,
                 linger: float = 0.05, write_timeout: float = 5.0,
                 retain: bool = False) -> None:
        self.store = store
        self.retain = retain
        self.closed = False  # its config's calls are over, and what it held is written
        self._backoff = 0.0  # seconds before retrying a batch put back (retain)
        self.capacity = capacity
        self.batch = batch
        self.linger = linger
        self.write_timeout = write_timeout
        self._pending: dict[tuple[str, str], TaskRecord] = {}
        # Callers of write() waiting for a task's record, by task: resolved by the first
        # write that carries the record as it was when they added it.
        self._waiting: dict[tuple[str, str], list[asyncio.Future[None]]] = {}
        # Whether the last write failed (the store is down, as far as this process knows;
        # the next write that succeeds says otherwise).
        self.failing = False
        self._wire: deque[WireItem] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._lingering: asyncio.Future[None] | None = None  # the writer waiting for company
        self._hurry = 0  # callers of flush() waiting: no lingering meanwhile

    def __len__(self) -> int:
        return len(self._pending) + len(self._wire)

    def full(self) -> bool:
        return len(self._pending) + len(self._wire) >= self.capacity

    def add(self, record: TaskRecord) -> None:
        self.add_all((record,))

    def add_all(self, records: Iterable[TaskRecord]) -> None:
        # One loop for all of a call's records (most calls have one): this runs for every
        # answer and stateful event, so nothing in it is a call it need not be.
        pending = self._pending
        added = False
        for record in records:
            key = (record.tenant, record.task_id)
            old = pending.get(key)
            if old is not None:
                pending[key] = merged(old, record)
            elif len(pending) + len(self._wire) < self.capacity:
                pending[key] = record
            else:
                TASK_DROPS.labels("queue_full").inc()
                continue
            added = True
        if added:
            self._wake(len(pending) + len(self._wire))

    def add_wire(self, item: WireItem) -> None:
        size = len(self._pending) + len(self._wire)
        if size >= self.capacity:
            TASK_DROPS.labels("queue_full").inc()
            return
        self._wire.append(item)
        self._wake(size + 1)

    def pending(self, tenant: str, task_id: str) -> TaskRecord | None:
        """An observation not written yet (the store does not know it so far)."""
        return self._pending.get((tenant, task_id))

    async def write(self, records: Iterable[TaskRecord]) -> None:
        """Record ``records`` and wait until the store has them: StoreError when it
        refused them or did not take them within `write_timeout`. Not counted against
        the table's capacity: those who wait are bounded by the calls in flight."""
        loop = asyncio.get_running_loop()
        pending, waiting = self._pending, self._waiting
        done: list[asyncio.Future[None]] = []
        for record in records:
            key = (record.tenant, record.task_id)
            old = pending.get(key)
            pending[key] = record if old is None else merged(old, record)
            future = loop.create_future()
            waiting.setdefault(key, []).append(future)
            done.append(future)
        if not done:
            return
        self._stop_lingering()
        self._wake(len(pending) + len(self._wire))
        # asyncio.timeout and plain awaits, not wait_for(gather(...)): those make a task
        # and a future more for every creating call (bench/recording_cpu.py).
        try:
            async with asyncio.timeout(self.write_timeout):
                for future in done:
                    await future
        except TimeoutError:
            raise StoreError(f"the task index was not written within "
                             f"{self.write_timeout:g} s") from None
        finally:
            for future in done:  # given up on (timeout, a failed write, the call cancelled)
                future.cancel()

    def _wake(self, size: int) -> None:
        """``size`` observations wait: the writer hurries when they make a batch, and
        starts when it is not running (it writes everything that comes while it runs)."""
        if size >= self.batch:
            self._stop_lingering()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    def _stop_lingering(self) -> None:
        lingering = self._lingering
        if lingering is not None and not lingering.done():
            lingering.set_result(None)

    async def _linger(self) -> None:
        """Wait up to `linger` for a batch to fill (or a flush). A bare future and a
        timer: asyncio.wait_for would make, and mostly cancel, a task every batch."""
        loop = asyncio.get_running_loop()
        self._lingering = lingering = loop.create_future()
        timer = loop.call_later(self.linger, _settle, lingering)
        try:
            await lingering
        finally:
            timer.cancel()
            self._lingering = None

    async def _write(self) -> None:
        # Runs while there is something to write, then ends; the next observation starts
        # it again. Everything that arrives while a batch is written joins the next one.
        pending, wire, waiting = self._pending, self._wire, self._waiting
        while pending or wire:
            if not self._hurry and not waiting and len(pending) + len(wire) < self.batch:
                await self._linger()  # at any rate, one write carries many tasks
            now = time.time()
            while wire:
                for record in wire_records(wire.popleft(), now):
                    key = (record.tenant, record.task_id)
                    old = pending.get(key)
                    pending[key] = record if old is None else merged(old, record)
            if len(pending) <= self.batch:
                batch = list(pending.values())
                pending.clear()
            else:  # those waiting first
                keys = [key for key in islice(waiting, self.batch) if key in pending]
                keys += islice((key for key in pending if key not in waiting),
                               self.batch - len(keys))
                batch = [pending.pop(key) for key in keys]
            # Who waits for this batch: only those whose record it carries (a record
            # added while it is written waits for the next).
            told = [f for r in batch for f in waiting.pop((r.tenant, r.task_id), ())] \
                if waiting else []
            try:
                await self.store.record_tasks(batch)
            except (StoreError, ValueError) as exc:
                self.failing = True
                _settle_all(told, exc if isinstance(exc, StoreError) else StoreError(str(exc)))
                if self.retain and isinstance(exc, StoreError):
                    await self._put_back(batch, exc)
                    continue
                TASK_DROPS.labels("store_error").inc(len(batch))
                log.warning("task index write failed", backend=self.store.backend,
                            records=len(batch), waiting=len(told), error=str(exc))
            else:
                self.failing = False
                self._backoff = 0.0
                TASK_RECORDS.inc(len(batch))
                _settle_all(told, None)

    async def _put_back(self, batch: list[TaskRecord], exc: StoreError) -> None:
        """A batch the store refused, kept for the next try (what came since is newer and
        merged over it), after a pause that doubles up to 5 s."""
        pending = self._pending
        for record in batch:
            key = (record.tenant, record.task_id)
            newer = pending.get(key)
            pending[key] = record if newer is None else merged(record, newer)
        self._backoff = min(max(self._backoff * 2, 0.1), 5.0)
        log.warning("task index write failed; kept, retrying", backend=self.store.backend,
                    records=len(batch), retry_in=self._backoff, error=str(exc))
        await asyncio.sleep(self._backoff)

    async def flush(self) -> None:
        """Wait until everything observed so far is written (or given up on). StoreError
        when kept records (retain) are still not written after `write_timeout`."""
        self._hurry += 1
        try:
            async with asyncio.timeout(self.write_timeout if self.retain else None):
                while self._writer is not None and not self._writer.done():
                    self._stop_lingering()
                    await asyncio.shield(self._writer)
        except TimeoutError:
            raise StoreError(f"the task index was not written within "
                             f"{self.write_timeout:g} s") from None
        finally:
            self._hurry -= 1

    async def close(self, timeout: float = 5.0) -> None:
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except (TimeoutError, StoreError):
            log.warning("task index: observations not written at shutdown", left=len(self))
            if self._writer is not None:
                self._writer.cancel()
        self.closed = True


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _settle_all(futures: list[asyncio.Future[None]], error: StoreError | None) -> None:
    """Tell those waiting for a batch how its write went (a waiter that gave up has a
    cancelled future: skipped)."""
    for future in futures:
        if not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)
