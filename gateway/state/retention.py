"""Pruning the task index on a timer (state.retention.interval). Every replica may run it:
pruning is idempotent, and a replica that prunes what another just did finds nothing.
Each pruning samples the stream journal's size for the metrics too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog

from gateway.observability.metrics import JOURNAL_BYTES, JOURNAL_EVENTS
from gateway.state.base import KeptOwner, Store, StoreError
from gateway.state.journal import JournalStore

log = structlog.get_logger("a2a_gateway.state")


Kept = Callable[[], Mapping[str, KeptOwner]]


async def prune_forever(store: Store, interval: float, kept: Kept | None = None) -> None:
    """Prune every ``interval`` seconds until cancelled; a failure is logged, not fatal.
    ``kept``: what the config serving now keeps of the conversations of a pruned task
    (its migrations': gateway/migration/tenants.py)."""
    while True:
        await asyncio.sleep(interval)
        try:
            dropped = await store.prune(kept=kept() if kept is not None else None)
        except StoreError as exc:
            log.warning("state store pruning failed", backend=store.backend, error=str(exc))
            continue
        except Exception:  # a bug of ours: said, and pruning goes on (it bounds the index)
            log.exception("state store pruning failed", backend=store.backend)
            continue
        if dropped:
            log.info("state store pruned", backend=store.backend, tasks=dropped)
        await sample_journal(store)


async def sample_journal(store: Store) -> None:
    """The stream journal's size into its gauges, where the store can tell it cheaply."""
    if not isinstance(store, JournalStore):
        return
    try:
        size = await store.journal_size()
    except StoreError as exc:
        log.warning("stream journal size unknown", backend=store.backend, error=str(exc))
        return
    if size is not None:
        JOURNAL_EVENTS.set(size.events)
        JOURNAL_BYTES.set(size.bytes)
