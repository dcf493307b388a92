"""Which agent owns a conversation and a task, across processes and replicas: a binding in
the store (Store.claim: the first writer wins, so two replicas that raced for a new
conversation agree on the one that won), remembered in a bounded local table (a binding
never changes while it lives, so the table is never stale)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable

from gateway.migration.sticky import ARMS, Arm
from gateway.state import Store, StoreError, store_unavailable

LOCAL_ENTRIES = 100_000  # bindings remembered in each process (least recently used go)


def _key(tenant: str, kind: str, ident: str) -> str:
    return f"migration:{tenant}:{kind}:{ident}"


class Owners:
    def __init__(self, store: Store | None, ttl: float, capacity: int = LOCAL_ENTRIES) -> None:
        self.store = store
        self.ttl = ttl
        self.capacity = capacity
        self._known: OrderedDict[str, Arm] = OrderedDict()

    def _remember(self, key: str, arm: Arm) -> Arm:
        self._known[key] = arm
        self._known.move_to_end(key)
        if len(self._known) > self.capacity:
            self._known.popitem(last=False)
        return arm

    def known(self, tenant: str, kind: str, ident: str) -> Arm | None:
        """The owner this process already knows (no store read)."""
        return self._known.get(_key(tenant, kind, ident))

    async def owner(self, tenant: str, kind: str, ident: str) -> Arm | None:
        """The owner of a conversation ("context") or a task ("task"); None when no one
        bound it (a task from before the migration: the primary's)."""
        key = _key(tenant, kind, ident)
        arm = self._known.get(key)
        if arm is not None or self.store is None:
            return arm
        try:
            found = await self.store.claimed(key)
        except StoreError as exc:
            raise store_unavailable("the migration's owners cannot be read now", exc) from exc
        return self._remember(key, found) if found in ARMS else None

    def claim(self, tenant: str, kind: str, ident: str, arm: Arm) -> Awaitable[Arm]:
        """Bind the conversation or task to ``arm`` unless bound already; the bound arm."""
        return self._claim(_key(tenant, kind, ident), arm)

    async def _claim(self, key: str, arm: Arm) -> Arm:
        known = self._known.get(key)
        if known is not None:
            return known
        if self.store is None:
            return self._remember(key, arm)
        try:
            bound = await self.store.claim(key, arm, self.ttl)
        except StoreError as exc:
            raise store_unavailable("the migration's owners cannot be written now",
                                    exc) from exc
        return self._remember(key, bound if bound in ARMS else arm)
