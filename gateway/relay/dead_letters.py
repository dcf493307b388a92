"""The push relay's dead letters as both faces show them: `a2a-gateway relay
list|show|replay|drop` (admin_cli.py) and the admin listener's
`/_admin/relay/dead-letters` endpoints (gateway/server/admin_relay.py). One
implementation, so the CLI and the endpoints cannot tell different stories."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from gateway.relay.delivery import webhook_host
from gateway.relay.seals import Sealer, SealError
from gateway.state.relay_queue import DeadLetter, RelayQueueStore

Action = Literal["replay", "drop"]


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def summary(letter: DeadLetter, sealer: Sealer) -> dict[str, Any]:
    """One dead letter without its body: the webhook's host only (never its path, query
    or credentials)."""
    d = letter.delivery
    try:
        webhook = webhook_host(sealer.open(d.item.sealed, check_age=False).url)
    except SealError:
        webhook = "<relay URL no longer opens>"
    return {"webhook_id": d.item.webhook_id, "task_id": d.item.task_id, "webhook": webhook,
            "attempts": d.attempts, "last_status": d.last_status, "last_error": d.last_error,
            "died_at": _when(letter.died_at), "expires_at": _when(letter.expires_at)}


async def listing(queue: RelayQueueStore, sealer: Sealer, tenant: str,
                  limit: int) -> list[dict[str, Any]]:
    """The tenant's dead letters, newest first."""
    return [summary(letter, sealer) for letter in await queue.relay_dead(tenant, limit)]


async def show(queue: RelayQueueStore, sealer: Sealer, tenant: str,
               webhook_id: str) -> dict[str, Any] | None:
    """One dead letter with its body (None: a v0.3 snapshot, made at delivery); None when
    the tenant has none by that id."""
    found = await queue.relay_dead_get(tenant, webhook_id)
    if found is None:
        return None
    shown = summary(found, sealer)
    body = found.delivery.item.body
    shown["body"] = None if body is None else json.loads(body)
    return shown


async def act(queue: RelayQueueStore, action: Action, tenant: str, webhook_id: str) -> bool:
    """Queue the dead letter again (same webhook-id) or forget it; False when the tenant
    has none by that id."""
    if action == "replay":
        return await queue.relay_replay(tenant, webhook_id)
    return await queue.relay_drop(tenant, webhook_id)


def missing(tenant: str, webhook_id: str) -> str:
    return f"tenant {tenant!r} has no dead letter {webhook_id!r}"
