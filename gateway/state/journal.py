"""The stream journal's storage contract: per (tenant, task), the canonical v1.0 stream
events the gateway forwarded, each with a sequence number, so that a client that lost
its stream can be served what it missed (docs/streams.md, "Resuming a stream").

Both stores implement it (gateway/state/sqlite_store.py, gateway/state/redis_store.py);
the stream side (gateway/streams/journal.py) knows nothing of which one is in use.

Sequence numbers start at 1 for a task and grow by one per entry. Two gateway streams
of the same task (two subscribers, or a client's resumed stream beside the stream it
left, which the gateway keeps reading) read the same events from the backend, and must
write one journal between them; so an append names the writer's *position* (the seq of
its last event), and an event whose bytes equal an entry after that position is that
entry, not a new one. Equal bytes before the position are a new event: an agent that
sends the same status twice has sent two events, and both are journaled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from gateway.config.state import JournalConfig


@dataclass(frozen=True, slots=True)
class JournalLimits:
    """The bounds of one task's journal (config: state.journal)."""

    max_events: int  # entries kept per task; the oldest go first
    max_bytes: int  # bytes of entries kept per task; the oldest go first
    ttl: float  # seconds a journal is kept once its task is terminal
    idle_ttl: float  # seconds a journal is kept after its last append otherwise


def limits_of(config: JournalConfig) -> JournalLimits:
    """The bounds `state.journal` sets on each task's journal."""
    return JournalLimits(config.max_events, config.max_bytes, config.ttl, config.idle_ttl)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class JournalRead:
    """What :meth:`JournalStore.journal_read` found: ``entries`` after the cursor (in seq
    order, at most the limit asked), ``first`` the oldest seq still held and ``last`` the
    newest (both 0 when the task has no journal), ``terminal``: an append said the task
    had reached a terminal state."""

    entries: list[JournalEntry]
    first: int
    last: int
    terminal: bool

    def lost_after(self, after: int) -> bool:
        """True when events after ``after`` were dropped (bounds, expiry) before being
        read: the journal cannot continue from that cursor."""
        if self.last == 0:
            return after > 0
        return after < self.first - 1 or after > self.last


@dataclass(frozen=True, slots=True)
class JournalSize:
    """What the journals of all tasks hold (unexpired ones): entries and their bytes."""

    events: int
    bytes: int


@runtime_checkable
class JournalStore(Protocol):
    async def journal_append(self, tenant: str, task_id: str, events: Sequence[bytes],
                             terminal: bool, limits: JournalLimits,
                             after: int | None) -> list[int]:
        """Atomically (across processes and replicas), each of ``events`` in order: when
        an entry with a seq above the writer's position holds the same bytes, the first
        such entry is the event (nothing is stored); else it is appended as a new entry.
        The position starts at ``after`` (None: the journal's last seq before this call —
        a stream that starts now matches only what is journaled from now on) and moves
        to each event's seq. Returns each event's seq. Then drop the oldest entries
        beyond ``limits.max_events`` / ``limits.max_bytes`` and set the journal's expiry:
        ``limits.ttl`` from now when ``terminal`` (the task reached a terminal state with
        these events; it stays so), else ``limits.idle_ttl``."""

    async def journal_read(self, tenant: str, task_id: str, after: int,
                           limit: int) -> JournalRead:
        """The entries with seq > ``after``, oldest first, at most ``limit``; an expired
        or absent journal reads as empty (first = last = 0)."""

    async def journal_size(self) -> JournalSize | None:
        """What the journals hold now, for the metrics (sampled at each pruning); None
        where finding out is not cheap (Redis: its journals are keys that expire)."""
