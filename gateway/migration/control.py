"""The canary's share now, per tenant, the same in every process and replica: the config's
(by mode: `canary.share` in `canary`, 1 in `cutover`, 0 otherwise) until it is moved — a
rollback (automatic or by hand) or a promotion — then the moved value, kept in the store
with the events that moved it. A move is tied to the config it was made under: a config
that changes the mode or the share starts from its own value again (the operator's word is
the newer one).

Each process reads the store's record at most every POLL seconds, in the background of the
calls that ask: a move made in one process reaches the others within that time. Whatever
sets the share tells `on_share` (the gauge a2a_gateway_migration_canary_share), so each
process shows the share it uses, a move read from the store included.

A read applies only what is newer than what this process knows: a read that began before
a move here (or before the record of a move reached the store), or before another read
that applied already, is dropped; else a background read begun before a rollback and
ended after it would put the share back, and lose the rollback's event, until the next
read."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from gateway.config.migration import MigrationConfig
from gateway.migration.api import Move
from gateway.state import Store, StoreError

log = structlog.get_logger("a2a_gateway.migration")

POLL = 1.0  # seconds between two reads of the store's record, per process
SWAP_TRIES = 5  # reads and replaces of the record, at most, while other processes move it
RECORD_TTL = 90 * 24 * 3600.0  # a record untouched for this long is forgotten


class _Unread:
    """The store's record could not be read (or there is no store)."""


UNREAD = _Unread()


def configured_share(config: MigrationConfig) -> float:
    return {"canary": config.canary.share, "cutover": 1.0}.get(config.mode, 0.0)


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Control:
    def __init__(self, tenant: str, config: MigrationConfig, store: Store | None,
                 clock: Callable[[], float] = time.monotonic,
                 on_share: Callable[[float], None] = lambda share: None,
                 on_promoted: Callable[[], None] = lambda: None) -> None:
        """``on_share``: told each share this process uses; ``on_promoted``: told of each
        promotion, here or read from the store (made in another process), whatever share
        this process saw meanwhile."""
        self.tenant = tenant
        self.config = config
        self.store = store
        self.clock = clock
        self.basis = f"{config.mode}:{configured_share(config):g}"
        self._on_share = on_share
        self._on_promoted = on_promoted
        self._newest_event: dict[str, Any] | None = None  # the newest move known here
        self.share = 0.0
        self._set(configured_share(config))
        self.events: list[dict[str, Any]] = []
        self._read_at = -POLL
        self._reading: asyncio.Task[None] | None = None
        self._key = f"migration:{tenant}:control"
        self._ticks = 0  # reads begun and moves made, numbered in order
        self._newest = 0  # the number of what the share comes from (a read, a move)
        self._writing = 0  # moves whose record is on its way to the store

    def _set(self, share: float) -> None:
        self.share = share
        self._on_share(share)

    def carry(self, previous: Control) -> None:
        """Keep what the control of the config this one replaced (a reload) knew: its
        events, and its moved share while the basis is the same. Without it, calls made
        before the first read of the store would go by the configured share again: the
        first new conversation after a reload could reach a rolled-back candidate."""
        self.events, self._newest_event = previous.events, previous._newest_event
        if previous.basis == self.basis:
            self._set(previous.share)

    @property
    def moved(self) -> bool:
        return self.share != configured_share(self.config)

    def current(self) -> float:
        """The share now, as last read; starts a read of the store when it is due."""
        if self.store is not None and self.clock() - self._read_at >= POLL \
                and (self._reading is None or self._reading.done()):
            self._read_at = self.clock()
            self._reading = asyncio.get_running_loop().create_task(self.refresh())
        return self.share

    def _tick(self) -> int:
        self._ticks += 1
        return self._ticks

    async def refresh(self) -> None:
        """The store's record read and applied, unless a move or a read made here since
        it began makes it outdated; a store that fails keeps the last share read (the
        next call tries again)."""
        await self._refreshed(by_hand=False, moving=False)

    def _outdated(self, began: int) -> bool:
        """Whether a read begun at ``began`` may hold a record older than what the share
        comes from: a move or a read that applied came after it began, or a move's
        record is on its way (the store may have answered before it)."""
        return began <= self._newest or self._writing > 0

    def _read(self, raw: str | None) -> tuple[object, float, list[dict[str, Any]]] | None:
        """A stored record's basis, share and events (None: none, or unreadable)."""
        if raw is None:
            return None
        try:
            record = json.loads(raw)
            events = [e for e in record.get("events", []) if isinstance(e, dict)]
            return record.get("basis"), float(record["share"]), events[: self.config.keep]
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("migration control record unreadable: ignored", tenant=self.tenant)
            return None

    def _apply(self, raw: str | None) -> None:
        read = self._read(raw)
        if read is None:
            return
        basis, share, self.events = read
        self._set(share if basis == self.basis else configured_share(self.config))
        newest = self.events[0] if self.events else None
        if newest != self._newest_event:
            self._newest_event = newest
            if newest is not None and newest.get("kind") == "promote" and basis == self.basis:
                self._on_promoted()

    async def adopt(self) -> None:
        """Make this config's basis the store's, as the config is applied (at the start,
        by a reload; this config's mode may be `off`): a record of another basis (a move
        made under another mode or share, or a config in between) is replaced by one at
        this config's share, its events kept; a record of this basis (a move made under
        this config, here or in another process) stays. Without it, a config going back
        to an earlier mode and share would find a move made under that one in force
        again, though a config with its own mode or share ended it. The record is
        replaced only as read (a move another process makes meanwhile is read again)."""
        if self.store is None:
            return
        try:
            for _ in range(SWAP_TRIES):
                raw = await self.store.claimed(self._key)
                read = self._read(raw)
                if read is None or read[0] == self.basis:
                    # A move made under this config holds from the first call on (not
                    # from the first background read: a fresh worker's first new
                    # conversation could reach a rolled-back candidate).
                    self._apply(raw)
                    return
                self.events = read[2]
                if await self.store.swap(self._key, raw, json.dumps({
                        "basis": self.basis, "share": configured_share(self.config),
                        "events": self.events}), RECORD_TTL):
                    return
        except StoreError as exc:  # the moves of another basis are ignored (_apply) still
            log.warning("migration control not adopted: the store refused it",
                        tenant=self.tenant, error=str(exc))

    async def move(self, action: Move, by: str, reason: str) -> bool:
        """Roll the canary back (share 0) or promote the candidate (share 1), say so in
        the log and the events, and keep it in the store for every process; False when
        the share is there already (read from the store first): nothing is recorded. The
        store's record is replaced only as read: of two processes moving at once (each
        worker's rollback seeing one outage), the second finds the share moved and
        records nothing. A move by hand needs the store (StoreError without it: the
        operator is told, not answered with a move the next read undoes); the automatic
        rollback holds in this process when the store fails."""
        to = 0.0 if action == "rollback" else 1.0
        by_hand = by != "automatic"
        for _ in range(SWAP_TRIES):
            raw = await self._refreshed(by_hand)
            if self.share == to:
                log.info("migration share not moved: it is there already",
                         tenant=self.tenant, action=action, by=by, share=to)
                return False
            # Its id makes the record this process's own (Store.swap: a retried write).
            event = {"at": _now_iso(), "id": secrets.token_hex(6), "kind": action,
                     "from_share": self.share, "to_share": to, "by": by, "reason": reason}
            events = [event, *self.events][: self.config.keep]
            record = json.dumps({"basis": self.basis, "share": to, "events": events})
            if await self._recorded(raw, record, by_hand):
                self._set(to)
                self.events, self._newest_event = events, event
                if action == "promote":
                    self._on_promoted()
                log.warning("migration share moved", tenant=self.tenant, action=action,
                            by=by, reason=reason, share=to)
                return True
        log.warning("migration share not moved: the store's record kept changing",
                    tenant=self.tenant, action=action, by=by)
        return False

    async def _refreshed(self, by_hand: bool, moving: bool = True) -> str | _Unread | None:
        """The store's record now (UNREAD: no store, or it failed: the share this process
        knows stands; by hand, StoreError), applied: always for a move (``moving``: it
        decides by the store's share and replaces that record), else unless outdated."""
        if self.store is None:
            return UNREAD
        began = self._tick()
        try:
            raw = await self.store.claimed(self._key)
        except StoreError as exc:
            log.warning("migration control unreadable", tenant=self.tenant, error=str(exc))
            if by_hand:
                raise
            return UNREAD
        if moving or not self._outdated(began):
            self._newest = max(self._newest, began)
            self._apply(raw)
        return raw

    async def _recorded(self, raw: str | _Unread | None, record: str, by_hand: bool) -> bool:
        """Replace the store's record ``raw`` by ``record``: False when another process
        replaced it first. A store that cannot be read or written: the move holds in
        this process only (logged). A read begun before the write ends may answer the
        record before it: outdated (:meth:`_outdated`)."""
        self._newest = self._tick()
        if isinstance(raw, _Unread) or self.store is None:
            if self.store is not None:
                log.error("migration share moved in this process only: the store refused it",
                          tenant=self.tenant)
            return True
        self._writing += 1
        try:
            return await self.store.swap(self._key, raw, record, RECORD_TTL)
        except StoreError as exc:
            if by_hand:
                log.warning("migration share not moved: the store refused it",
                            tenant=self.tenant, error=str(exc))
                raise
            log.error("migration share moved in this process only: the store refused it",
                      tenant=self.tenant, error=str(exc))
            return True
        finally:
            self._writing -= 1
            self._newest = self._tick()

    def rolled_back_by(self) -> str | None:
        """Who rolled the canary back ("automatic": a threshold), while it is rolled
        back: the newest event a rollback and the share still the one it moved to (a
        config that set a share of its own since, or a promotion, ends it)."""
        newest = self.events[0] if self.events else None
        if newest is None or newest.get("kind") != "rollback" or not self.moved:
            return None
        return str(newest.get("by", ""))
