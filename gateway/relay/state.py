"""What the relay remembers between notifications: which ones it has already taken (a
backend that posts the same notification again, or someone replaying a captured one,
gets no second delivery), and which seals are spent (their task has ended).

Without a store this is process-local, bounded in entries and in time. With one
(gateway/state: SQLite shared by a host's workers, Redis shared by replicas) every fact
lives there, so a notification taken by one replica is not delivered again by another.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.state import Store

# Entries kept at most; the oldest go first.
MAX_ENTRIES = 100_000


class _Expiring:
    """key → value until a time; least recently written first."""

    def __init__(self, max_entries: int) -> None:
        self._items: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._max = max_entries

    def put(self, key: str, value: float, until: float) -> None:
        self._items[key] = (value, until)
        self._items.move_to_end(key)
        now = time.time()
        while self._items and (len(self._items) > self._max
                               or next(iter(self._items.values()))[1] <= now):
            self._items.popitem(last=False)

    def get(self, key: str) -> float | None:
        item = self._items.get(key)
        return item[0] if item is not None and item[1] > time.time() else None


# Seconds a store remembers which task a seal was bound to (a seal lives at most
# push_relay.seal_max_age, a week by default).
BIND_TTL = 30 * 24 * 3600.0


class RelayState:
    def __init__(self, max_entries: int = MAX_ENTRIES, store: Store | None = None,
                 bind_ttl: float = BIND_TTL) -> None:
        self._store = store
        self._bind_ttl = bind_ttl
        self._seen = _Expiring(max_entries)
        self._spent = _Expiring(max_entries)
        self._bound: OrderedDict[str, str] = OrderedDict()
        self._max = max_entries

    async def bind(self, seal_id: str, task_id: str) -> bool:
        """Bind a seal made before its task existed to the first task it carries; False
        when it is already bound to another one."""
        if self._store is not None:
            return await self._store.claim(f"relay-bind:{seal_id}", task_id,
                                           self._bind_ttl) == task_id
        bound = self._bound.setdefault(seal_id, task_id)
        self._bound.move_to_end(seal_id)
        if len(self._bound) > self._max:
            self._bound.popitem(last=False)
        return bound == task_id

    async def first_time(self, key: str, ttl: float) -> bool:
        """True the first time ``key`` is offered within ``ttl`` seconds."""
        if self._store is not None:
            return await self._store.seen_once(f"relay-seen:{key}", ttl)
        if self._seen.get(key) is not None:
            return False
        self._seen.put(key, 0.0, time.time() + ttl)
        return True

    async def spend(self, seal_id: str, after: float, remember: float) -> None:
        """The seal stops working ``after`` seconds from now (its task has ended); the
        fact is kept ``remember`` seconds (past the seal's own age limit it is moot)."""
        if self._store is not None:
            await self._store.mark_spent(f"relay-spent:{seal_id}", remember, after)
            return
        if self._spent.get(seal_id) is None:
            now = time.time()
            self._spent.put(seal_id, now + after, now + after + remember)

    async def spent(self, seal_id: str) -> bool:
        if self._store is not None:
            return await self._store.is_spent(f"relay-spent:{seal_id}")
        at = self._spent.get(seal_id)
        return at is not None and time.time() >= at
