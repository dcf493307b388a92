"""The push relay's durable queue: the storage contract (docs/push-relay.md, "Delivery
guarantees"). The relay endpoint answers a backend's notification 2xx only once
:meth:`RelayQueueStore.relay_enqueue` has stored it; the relay worker
(gateway/relay/worker.py) claims due deliveries under a lease, posts them and reports
each outcome back; deliveries that exhaust their attempts become dead letters, kept for
a bounded time for `a2a-gateway relay list|show|replay|drop`.

Order: deliveries of one *lane* (a relay config and a task) go out one at a time in the
order they were queued: only a lane's oldest delivery is ever claimed. A claim holds the
delivery ``lease`` seconds; a process that dies holding it leaves it to any other after
that (the same attempt may then be made twice: at-least-once, the `webhook-id` lets
receivers drop the repeat).

Both stores implement it (gateway/state/sqlite_relay.py, gateway/state/redis_relay.py);
a relay built without a store (tests) queues in an in-memory SQLite database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

# What relay_enqueue did with a notification.
Enqueued = Literal["queued", "duplicate", "coalesced", "full"]


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """A notification to deliver, as the relay endpoint took it."""

    tenant: str
    lane: str  # the relay config's seal id and the task: deliveries in order per lane
    webhook_id: str  # the same on every attempt and replay (the `webhook-id` header)
    sealed: str  # the relay URL's seal: the client's webhook, encrypted
    task_id: str
    body: bytes | None  # the client's body; None: the Task snapshot the event implies
    event: bytes  # the canonical event (a2a_pb2.StreamResponse), for snapshots
    dropped: str  # what translating the body dropped (JSON list), for the log
    trace: str  # the notification's trace context (JSON object), the deliveries' parent


@dataclass(frozen=True, slots=True)
class QueuedDelivery:
    """A delivery a process claimed (or a dead letter's record: see DeadLetter)."""

    id: int
    item: NewDelivery
    attempts: int  # attempts made before this claim
    last_status: int  # HTTP status of the last attempt (0: none, or no answer)
    last_error: str


@dataclass(frozen=True, slots=True)
class DeadLetter:
    delivery: QueuedDelivery
    died_at: float  # seconds since the epoch
    expires_at: float


@dataclass(frozen=True, slots=True)
class RelayQueueLimits:
    max_per_tenant: int  # deliveries waiting per tenant (dead letters not counted)
    dedupe_ttl: float  # seconds a webhook id is remembered: the same one again is a duplicate


@runtime_checkable
class RelayQueueStore(Protocol):
    async def relay_enqueue(self, item: NewDelivery, limits: RelayQueueLimits) -> Enqueued:
        """Atomically: "duplicate" when ``item.webhook_id`` was queued within
        ``limits.dedupe_ttl``; "coalesced" when ``item`` is a snapshot (body None) and
        the lane's newest delivery is a snapshot not yet attempted (one fetch covers
        both); "full" when the tenant has ``limits.max_per_tenant`` waiting; else stored
        at the end of its lane, due now: "queued"."""

    async def relay_claim(self, limit: int, lease: float, exclude: frozenset[str]) -> list[
            QueuedDelivery]:
        """At most ``limit`` due deliveries, each the oldest of its lane, no lane in
        ``exclude`` (those this process is delivering), none another process holds;
        each is held ``lease`` seconds from now."""

    async def relay_next_due(self) -> float | None:
        """Seconds until the next delivery comes due (0: one is due now; None: none is
        queued)."""

    async def relay_done(self, delivery_id: int) -> None:
        """Delivered: forget it (its lane's next one may go)."""

    async def relay_release(self, delivery_ids: list[int]) -> None:
        """Give claimed deliveries back unattempted (a process that stops): due at once
        for any process, instead of after their lease."""

    async def relay_postpone(self, delivery_id: int, delay: float) -> None:
        """Give a claimed delivery back unattempted, due ``delay`` seconds from now (its
        destination's circuit is open: gateway/relay/destinations.py)."""

    async def relay_retry(self, delivery_id: int, delay: float, status: int, error: str,
                          body: bytes | None) -> None:
        """An attempt failed: count it, remember its outcome, release the lease, due again
        ``delay`` seconds from now. ``body``: the snapshot it sent (kept for the next
        attempts), or None."""

    async def relay_bury(self, delivery_id: int, status: int, error: str,
                         body: bytes | None, ttl: float) -> None:
        """Out of attempts (or not retryable): count the attempt and move it to the dead
        letters, kept ``ttl`` seconds."""

    async def relay_dead(self, tenant: str, limit: int) -> list[DeadLetter]:
        """The tenant's dead letters, newest first."""

    async def relay_dead_get(self, tenant: str, webhook_id: str) -> DeadLetter | None: ...

    async def relay_replay(self, tenant: str, webhook_id: str) -> bool:
        """Queue the dead letter again (same webhook id, attempts from zero, due now, at
        the end of its lane); False when there is none."""

    async def relay_drop(self, tenant: str, webhook_id: str) -> bool:
        """Forget the dead letter; False when there is none."""
