"""What the gateway remembers across calls, processes and replicas: the task index, the
relay's replay and spent-seal facts, and rate-limit buckets, behind one small interface.

Two implementations: :class:`~gateway.state.sqlite_store.SqliteStore` (one file, the
default; several workers on one host share it) and
:class:`~gateway.state.redis_store.RedisStore` (replicas). Nothing else in the gateway
knows which one is in use.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import structlog

from gateway.state.journal import JournalStore
from translators.errors import A2AError, a2a_error

log = structlog.get_logger("a2a_gateway.state")

# ListTasks: at most 100 a page, 50 when the client names none (a2a.proto v1.0).
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50


class StoreError(Exception):
    """The store cannot be reached or used (the message says why)."""


# Seconds a caller refused for want of the store is told to wait (Retry-After): a store
# that restarts is back within seconds, and one that does not is not helped by a storm.
STORE_RETRY_AFTER = 1


def store_unavailable(what: str, cause: StoreError | None = None) -> A2AError:
    """The caller's error when the store failed a call needs: StoreUnavailableError —
    HTTP 503 + Retry-After, gRPC UNAVAILABLE + retry-after, JSON-RPC -32603 with reason
    STORE_UNAVAILABLE — never an InternalError. The cause goes to the log (a warning
    line "state store unavailable"), not to the caller; pass none if the caller logged
    it already."""
    if cause is not None:
        log.warning("state store unavailable", what=what, error=str(cause))
    return a2a_error("StoreUnavailableError", f"{what}; retry in {STORE_RETRY_AFTER} s",
                     retry_after=STORE_RETRY_AFTER)


@dataclass(frozen=True, slots=True)
class KeptOwner:
    """What pruning a tenant's tasks leaves of them: each conversation's key (``prefix``
    + its contextId) bound to the task's agent (``value`` where none was recorded), and
    the key of each task recorded with another agent (``tasks`` + its id) bound to that
    agent, for ``ttl`` seconds, as :meth:`Store.claim` binds (a live binding stays; an
    expired one is taken over). A migration follows its conversations and tasks by the
    tasks the index holds of them (gateway/migration/tenant.py), so the index forgets
    none of them silently."""

    prefix: str
    value: str
    ttl: float
    tasks: str = ""  # "": the tasks' keys are not bound


class BadPageToken(ValueError):
    """A page token this store did not make (ListTasks: InvalidParams)."""


@dataclass(slots=True)
class TaskRecord:
    """One task the gateway has seen. Timestamps are seconds since the epoch;
    ``updated_at`` is the task status's timestamp (ListTasks orders and filters by it).
    Not frozen (treat it as a value all the same): the task index makes one per call
    observed, and a frozen dataclass's __init__ costs five times a plain one's."""

    tenant: str
    task_id: str
    context_id: str
    state: str
    created_at: float
    updated_at: float
    owner: str | None = None
    backend: str = ""
    # The agent of a migration that serves the task ("primary", or "candidate@" and its
    # address's fingerprint: gateway/migration/agents.py; None outside one): the first
    # recorded stays, as the owner does. A migration follows the tasks
    # and conversations by it (gateway/migration/tenant.py).
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class TaskPage:
    records: list[TaskRecord]
    next_page_token: str  # "" on the last page, as ListTasks says
    total_size: int


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """The filters of one ListTasks call, already scoped to a tenant (and an owner when
    ownership is on: None lists every owner's tasks)."""

    tenant: str
    owner: str | None = None
    context_id: str | None = None
    states: Collection[str] | None = None
    status_after: float | None = None  # inclusive: updated_at >= status_after

    def matches(self, r: TaskRecord) -> bool:
        return (r.tenant == self.tenant
                and (self.owner is None or r.owner == self.owner)
                and (self.context_id is None or r.context_id == self.context_id)
                and (not self.states or r.state in self.states)
                and (self.status_after is None or r.updated_at >= self.status_after))


def clamp_page_size(requested: int | None) -> int:
    if requested is None or requested <= 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


# A page token is the position after the last record shown: (updated_at, task_id) in the
# order updated_at descending, task_id descending. Opaque to clients; a task inserted or
# updated while a client pages sorts before the cursor, so pages never repeat or skip one
# that stays put.
Cursor = tuple[float, str]


def encode_token(cursor: Cursor) -> str:
    raw = json.dumps([repr(cursor[0]), cursor[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str) -> Cursor | None:
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        at, task_id = json.loads(raw)
        return float(at), str(task_id)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise BadPageToken(f"page token {token[:40]!r} was not made by this gateway") from exc


@runtime_checkable
class Store(JournalStore, Protocol):
    """The shared state. Every method is safe to call from many tasks, processes and (for
    Redis) hosts at once; the atomic ones say so. The stream journal's two methods
    (``journal_append``, ``journal_read``) are declared in gateway/state/journal.py."""

    backend: str  # "sqlite" or "redis", for logs and /readyz

    async def record_task(self, record: TaskRecord) -> None:
        """Insert or replace the task (tenant, task_id). ``created_at``, ``owner`` and
        ``agent`` of an existing record are kept (the first writer owns the task; a later
        record fills an owner or agent still missing)."""

    async def record_tasks(self, records: Sequence[TaskRecord]) -> None:
        """:meth:`record_task` for each of ``records``, in one round trip (the task index
        writes its observations in batches). Not atomic as a whole: each record is."""

    async def get_task(self, tenant: str, task_id: str) -> TaskRecord | None: ...

    async def list_tasks(self, query: TaskQuery, page_size: int | None = None,
                         page_token: str = "") -> TaskPage:
        """The tasks ``query`` matches, status timestamp descending (then task id
        descending), from ``page_token`` on; ``total_size`` counts all matches."""

    async def prune(self, older_than: float | None = None,
                    kept: Mapping[str, KeptOwner] | None = None) -> int:
        """Drop tasks not updated since ``older_than`` (default: now - retention.max_age)
        and the oldest beyond retention.max_tasks, and expired relay/limit entries and
        stream journals; the conversations (and tasks) of a dropped task of a tenant in
        ``kept`` are bound as it says, in the same transaction. Returns how many tasks were
        dropped."""

    async def seen_once(self, key: str, ttl: float) -> bool:
        """Atomically: True for the first caller offering ``key`` within ``ttl`` seconds,
        False for every other, in any process."""

    async def claim(self, key: str, value: str, ttl: float) -> str:
        """Atomically bind ``key`` to ``value`` unless already bound; returns the bound
        value (``value`` for the first caller)."""

    async def claim_all(self, items: Sequence[tuple[str, str]], ttl: float) -> list[str]:
        """:meth:`claim` for each (key, value) of ``items``, in one round trip (one
        transaction); the value each key is bound to, in order."""

    async def claimed(self, key: str) -> str | None:
        """The value ``key`` is bound to (by :meth:`claim` or :meth:`rebind`), or None;
        binds nothing."""

    async def rebind(self, key: str, value: str, ttl: float) -> None:
        """Bind ``key`` to ``value`` for ``ttl`` seconds, replacing any binding (a
        setting an operator moves: the migration's canary share)."""

    async def swap(self, key: str, expected: str | None, value: str, ttl: float) -> bool:
        """Atomically: bind ``key`` to ``value`` for ``ttl`` seconds if it is bound to
        ``expected`` now (None: bound to nothing), in any process; whether it was, or is
        bound to ``value`` already (the same swap again, after a reply lost: make each
        value unique). For a setting two processes may move at once: the migration's
        canary share."""

    async def mark_spent(self, key: str, ttl: float, after: float = 0.0) -> None:
        """``key`` is spent from ``after`` seconds on, remembered ``ttl`` seconds more.
        The first mark wins; later ones do not move it."""

    async def is_spent(self, key: str) -> bool: ...

    async def take_tokens(self, key: str, rate: float, burst: float,
                          cost: float = 1.0) -> tuple[bool, float]:
        """Token bucket, atomic across processes: ``burst`` tokens at most, ``rate`` per
        second refill. (True, 0) when ``cost`` tokens were taken, else (False, seconds
        until they will be there)."""

    async def ping(self) -> None:
        """Raise StoreError when the store cannot serve (for /readyz)."""

    async def close(self) -> None: ...


def bucket(tokens: float, last: float, now: float, rate: float, burst: float,
           cost: float) -> tuple[bool, float, float]:
    """One token-bucket step: (allowed, retry_after, tokens left)."""
    tokens = min(burst, tokens + max(0.0, now - last) * rate)
    if tokens >= cost:
        return True, 0.0, tokens - cost
    if cost > burst or rate <= 0:
        return False, float("inf"), tokens
    return False, (cost - tokens) / rate, tokens
