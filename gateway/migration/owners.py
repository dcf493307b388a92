"""Which agent owns a conversation and a task, across processes and replicas: a binding in
the store (Store.claim: the first writer wins, so two replicas that raced for a new
conversation agree on the one that won), remembered in a bounded local table (a binding
never changes while it lives, so the table is never stale).

Bindings are written in batches, one store transaction for all that are waiting (a group
commit): a call that must wait for its bindings (a new conversation, or a task the
candidate took: a follow-up through any replica must find it) shares the write with
every call waiting at that moment; the others (what pruning leaves the primary, the
primary's conversation under way before the migration) go with the next write, up to
QUEUED of them, and past that are dropped and counted. The primary's tasks are never
written (a task no one bound is the primary's): only remembered (:meth:`remember`); with
the task index on, neither is what an answer shows with a task the index records (its
row records the agent: gateway/migration/tenant.py).

No call waits when no other process reads the store (``waits`` false: one process alone
on SQLite with `state.tasks.wait_for_writes: auto`, the task index's rule): this process
follows its local table, and its bindings go with the next write (SIGTERM writes them)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence

import structlog

from gateway.migration.agents import PLAIN, AgentNames
from gateway.migration.sticky import Arm
from gateway.state import Store, StoreError, store_unavailable

log = structlog.get_logger("a2a_gateway.migration")

LOCAL_ENTRIES = 100_000  # bindings remembered in each process (least recently used go)
QUEUED = 10_000  # bindings waiting for their write that no call waits for, at most
LINGER = 0.02  # seconds a write no call waits for lingers, to take more with it


def owner_prefix(tenant: str, kind: str) -> str:
    """What every key of ``tenant``'s conversations ("context") or tasks ("task") starts
    with: a call's key is this and its id (made once per tenant: formatting the whole key
    for each call cost as much as the rest of a GetTask's routing)."""
    return f"migration:{tenant}:{kind}:"


def owner_key(tenant: str, kind: str, ident: str) -> str:
    return owner_prefix(tenant, kind) + ident


class Owners:
    def __init__(self, store: Store | None, ttl: float, capacity: int = LOCAL_ENTRIES,
                 waits: bool = True, names: AgentNames = PLAIN) -> None:
        """``waits``: a binding that must be seen elsewhere is written before :meth:`bind`
        returns (other workers or replicas read the store); ``names``: what the store
        records for each arm (gateway/migration/agents.py)."""
        self.store = store
        self.names = names
        self.ttl = ttl
        self.waits = waits
        self.capacity = capacity
        self.dropped = 0  # background bindings dropped for want of room
        self._known: OrderedDict[str, Arm] = OrderedDict()
        self._queued: dict[str, Arm] = {}
        self._waiting: list[asyncio.Future[None]] = []
        # The write on its way: its bindings, and who waits for it.
        self._writing: dict[str, Arm] = {}
        self._writing_waiters: list[asyncio.Future[None]] = []
        self._writer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None  # a caller waits: the linger ends now

    def remember(self, key: str, arm: Arm) -> Arm:
        """Follow ``key``'s owner in this process (only: what needs no write, as a task no
        one bound is the primary's in every process; or what the store had)."""
        known = self._known
        known[key] = arm
        known.move_to_end(key)
        if len(known) > self.capacity:
            self._trim()
        return arm

    def _trim(self) -> None:
        known = self._known
        while len(known) > self.capacity:
            known.popitem(last=False)

    def known(self, key: str) -> Arm | None:
        """The owner of ``key`` (from :func:`owner_key`) this process already knows (no
        store read)."""
        return self._known.get(key)

    async def owner(self, tenant: str, kind: str, ident: str) -> Arm | None:
        """The owner of a conversation ("context") or a task ("task"); None when no one
        bound it (a task from before the migration: the primary's)."""
        key = owner_key(tenant, kind, ident)
        arm = self._known.get(key)
        if arm is not None or self.store is None:
            return arm
        try:
            found = await self.store.claimed(key)
        except StoreError as exc:
            raise store_unavailable("the migration's owners cannot be read now", exc) from exc
        arm = self.names.read(found)
        return None if arm is None else self.remember(key, arm)

    async def claim(self, tenant: str, kind: str, ident: str, arm: Arm) -> Arm:
        """Bind one conversation or task to ``arm`` unless bound already; the bound arm."""
        key = owner_key(tenant, kind, ident)
        await self.bind([key], arm)
        return self._known.get(key, arm)

    def _taken(self, keys: Sequence[str], arm: Arm, wait: bool) -> bool:
        """Take the bindings of ``keys`` not known yet to be written; whether any were."""
        known = self._known
        fresh = [k for k in keys if k not in known]
        if not fresh:
            return False
        for key in fresh:  # this process follows them at once (new keys go last)
            known[key] = arm
        if len(known) > self.capacity:
            self._trim()
        if self.store is None:
            return False
        queued = self._queued
        if not wait and len(queued) + len(fresh) > QUEUED:
            self.dropped += len(fresh)
            log.warning("migration owners dropped: the write queue is full", dropped=len(fresh))
            return False
        for key in fresh:
            queued[key] = arm
        return True

    def bind_later(self, keys: Sequence[str], arm: Arm) -> None:
        """Bind ``keys`` (from :func:`owner_key`) to ``arm`` where not bound yet, with the
        next write (no one waits for it)."""
        if self._taken(keys, arm, wait=False):
            self._start()

    async def bind(self, keys: Sequence[str], arm: Arm, wait: bool = True) -> None:
        """Bind ``keys`` to ``arm`` where not bound yet, in the store before this returns
        (``wait`` and :attr:`waits`: else as :meth:`bind_later`)."""
        if not (wait and self.waits):
            self.bind_later(keys, arm)
            return
        if self._taken(keys, arm, wait=True) or any(k in self._queued for k in keys):
            waiting = self._waiting  # the next write (after the one on its way, if any)
        elif any(k in self._writing for k in keys):
            waiting = self._writing_waiters
        else:
            return
        # Known but not written yet (two calls raced for one new conversation, the other
        # took it): this call waits for the write that carries it too, or its answer
        # would go out before another process can read the owner.
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting.append(done)
        if waiting is self._waiting:
            if self._wake is not None:
                self._wake.set()
            self._start()
        await done

    def _start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _lingered(self) -> None:
        """LINGER seconds, or until a caller waits for a write."""
        self._wake = asyncio.Event()
        try:
            await asyncio.wait_for(self._wake.wait(), LINGER)
        except TimeoutError:
            pass
        finally:
            self._wake = None

    async def _write(self) -> None:
        assert self.store is not None
        while self._queued:
            # Each batch no caller waits for lingers: the bindings that come meanwhile go
            # with it (one transaction, one hop to the store's thread, per LINGER), also
            # those that came while the last write was on its way.
            if not self._waiting:
                await self._lingered()
            self._writing, self._queued = self._queued, {}
            items = list(self._writing.items())
            self._writing_waiters = waiting = self._waiting
            self._waiting = []
            try:
                bound = await self._claimed(items)
            except StoreError as exc:
                failed = store_unavailable("the migration's owners cannot be written now")
                log.warning("migration owners not written", error=str(exc),
                            bindings=len(items), waited=len(waiting))
                if self.waits:
                    self._forget(items)
                for done in waiting:
                    if not done.done():
                        done.set_exception(failed)
                continue
            except BaseException as exc:  # cancelled (closing): no caller hangs
                for done in waiting:
                    if not done.done():
                        done.set_exception(store_unavailable("the gateway is closing"))
                raise exc
            read = self.names.read
            for (key, mine), value in zip(items, bound, strict=True):
                arm = read(value)
                if arm is not None and arm != mine:  # another process bound it first
                    self.remember(key, arm)
            for done in waiting:
                if not done.done():
                    done.set_result(None)

    async def _claimed(self, items: Sequence[tuple[str, Arm]]) -> list[str]:
        """The write of ``items`` on its way (:attr:`_writing`): what the store holds for
        each key after it."""
        assert self.store is not None
        written = self.names.written
        try:
            return await self.store.claim_all([(k, written(a)) for k, a in items], self.ttl)
        finally:
            self._writing = {}  # a caller that joins from now on waits for the next write

    def _forget(self, items: Sequence[tuple[str, Arm]]) -> None:
        """Drop from the local table the bindings of a write the store refused, where
        this process still follows the arm that write was for. Known, a binding is never
        taken again (:meth:`_taken`): the refused caller's retry would answer at once and
        no other process would learn the owner; forgotten, the next call looks it up as
        every other process does, and a bind of it writes it. A key followed otherwise
        since (another arm: :meth:`remember`) or taken again (queued) stays. Only where
        others read the store (:attr:`waits`): alone, this table is what routes, and a
        conversation forgotten would be hashed anew by its id (perhaps to the agent that
        never saw it); its binding is lost, as before, and nothing else asks."""
        known, queued = self._known, self._queued
        for key, mine in items:
            if known.get(key) == mine and key not in queued:
                del known[key]

    async def flushed(self) -> None:
        """The bindings taken so far, written (a closing gateway's last write: it does
        not linger). Those taken meanwhile are not waited for: the config a reload put in
        place of a closing one may share these owners, and goes on binding."""
        loop = asyncio.get_running_loop()
        writes: list[asyncio.Future[None]] = []
        if self._writing:
            writes.append(loop.create_future())
            self._writing_waiters.append(writes[-1])
        if self._queued:
            writes.append(loop.create_future())
            self._waiting.append(writes[-1])  # a write someone waits for: no linger
            if self._wake is not None:
                self._wake.set()
            self._start()
        if writes:  # a store refusing them has been logged
            await asyncio.gather(*writes, return_exceptions=True)
