"""Pruning the task index on a timer (state.retention.interval). Every replica may run it:
pruning is idempotent, and a replica that prunes what another just did finds nothing."""

from __future__ import annotations

import asyncio

import structlog

from gateway.state.base import Store, StoreError

log = structlog.get_logger("a2a_gateway.state")


async def prune_forever(store: Store, interval: float) -> None:
    """Prune every ``interval`` seconds until cancelled; a failure is logged, not fatal."""
    while True:
        await asyncio.sleep(interval)
        try:
            dropped = await store.prune()
        except StoreError as exc:
            log.warning("state store pruning failed", backend=store.backend, error=str(exc))
            continue
        if dropped:
            log.info("state store pruned", backend=store.backend, tasks=dropped)
