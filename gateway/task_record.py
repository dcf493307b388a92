"""Writing the task index off the call's path.

A call or an event hands its observations to :class:`TaskRecorder` and goes on: they
wait in a bounded table, one entry per (tenant, task id) — a task seen again before it
was written is merged, not queued twice — and one background task writes them in
batches (it waits up to `linger` for a batch to fill: one write then carries many tasks).
When the table is full, an observation is dropped and counted; a call never waits for
the store. Answers passed through as the backend sent them are read (only
their task fields) by the writer, not by the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import structlog

from gateway.metrics import TASK_DROPS, TASK_RECORDS
from gateway.state import Store, StoreError, TaskRecord
from translators.task_facts import TaskFacts, document_facts, wire_facts

log = structlog.get_logger("a2a_gateway.task_index")


# Not frozen: these are made for every call, and a frozen dataclass's __init__ costs five
# times a plain one's.


@dataclass(slots=True)
class Seen:
    """Who saw a task, and through which backend (everything but the task's facts)."""

    tenant: str
    owner: str | None
    backend: str

    def record(self, facts: TaskFacts, now: float) -> TaskRecord:
        at = facts.timestamp if facts.timestamp is not None else now
        return TaskRecord(self.tenant, facts.task_id, facts.context_id, facts.state, at, at,
                          self.owner, self.backend)


@dataclass(slots=True)
class WireSeen:
    """A passed-through answer, read later: the dialect it is in, its operation, and what
    the gateway read of it (WireAnswer.document; its bytes when it read none)."""

    seen: Seen
    binding: str
    version: str
    op: str
    body: bytes
    document: Any = None

    def facts(self) -> list[TaskFacts]:
        if self.document is not None:
            return document_facts(self.binding, self.version, self.op, self.document)
        return wire_facts(self.binding, self.version, self.op, self.body)


def merged(old: TaskRecord, new: TaskRecord) -> TaskRecord:
    """Two observations of one task, as the store would keep them (the newer status wins;
    the first creation time and the first owner stay)."""
    newer = new if new.updated_at >= old.updated_at else old
    return TaskRecord(old.tenant, old.task_id, newer.context_id, newer.state,
                      min(old.created_at, new.created_at), newer.updated_at,
                      old.owner if old.owner is not None else new.owner, newer.backend)


class TaskRecorder:
    def __init__(self, store: Store, capacity: int = 10_000, batch: int = 500,
                 linger: float = 0.02) -> None:
        self.store = store
        self.capacity = capacity
        self.batch = batch
        self.linger = linger
        self._pending: dict[tuple[str, str], TaskRecord] = {}
        self._wire: deque[WireSeen] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._full = asyncio.Event()  # a batch is waiting, or someone waits for the write
        self._hurry = 0  # callers of flush() waiting: no lingering meanwhile

    def __len__(self) -> int:
        return len(self._pending) + len(self._wire)

    def add(self, record: TaskRecord) -> None:
        key = (record.tenant, record.task_id)
        old = self._pending.get(key)
        if old is not None:
            self._pending[key] = merged(old, record)
        elif len(self) < self.capacity:
            self._pending[key] = record
        else:
            TASK_DROPS.labels("queue_full").inc()
            return
        self._wake(len(self))

    def add_all(self, records: Sequence[TaskRecord]) -> None:
        for record in records:
            self.add(record)

    def add_wire(self, item: WireSeen) -> None:
        size = len(self)
        if size >= self.capacity:
            TASK_DROPS.labels("queue_full").inc()
            return
        self._wire.append(item)
        self._wake(size + 1)

    def pending(self, tenant: str, task_id: str) -> TaskRecord | None:
        """An observation not written yet (the store does not know it so far)."""
        return self._pending.get((tenant, task_id))

    def _wake(self, size: int) -> None:
        """``size`` observations wait: the writer hurries when they make a batch, and
        starts when it is not running (it writes everything that comes while it runs)."""
        if size >= self.batch:
            self._full.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        # Runs while there is something to write, then ends; the next observation starts
        # it again. Everything that arrives while a batch is written joins the next one.
        while self._pending or self._wire:
            if not self._hurry and len(self) < self.batch and not self._full.is_set():
                # Wait a little for company: at any rate, one write carries many tasks.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._full.wait(), self.linger)
            self._full.clear()
            now = time.time()
            pending, wire = self._pending, self._wire
            while wire:
                item = wire.popleft()
                for facts in item.facts():
                    record = item.seen.record(facts, now)
                    key = (record.tenant, record.task_id)
                    old = pending.get(key)
                    pending[key] = record if old is None else merged(old, record)
            keys = list(islice(self._pending, self.batch))
            batch = [self._pending.pop(key) for key in keys]
            try:
                await self.store.record_tasks(batch)
            except (StoreError, ValueError) as exc:
                TASK_DROPS.labels("store_error").inc(len(batch))
                log.warning("task index write failed", backend=self.store.backend,
                            records=len(batch), error=str(exc))
            else:
                TASK_RECORDS.inc(len(batch))

    async def flush(self) -> None:
        """Wait until everything observed so far is written (or given up on)."""
        self._hurry += 1
        try:
            while self._writer is not None and not self._writer.done():
                self._full.set()
                await asyncio.shield(self._writer)
        finally:
            self._hurry -= 1

    async def close(self, timeout: float = 5.0) -> None:
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except TimeoutError:
            log.warning("task index: observations not written at shutdown", left=len(self))
            if self._writer is not None:
                self._writer.cancel()
