"""`a2a-gateway relay list|show|replay|drop`: the push relay's dead letters, per tenant
(docs/push-relay.md, "Dead letters"). Reads the store the config names, as the running
gateway does; a replayed delivery is queued again and the gateway's relay worker sends it
at its next look at the queue (`push_relay.queue.poll`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from gateway.config.models import ConfigError, load_config
from gateway.relay.delivery import webhook_host
from gateway.relay.seals import Sealer, SealError, load_keys
from gateway.state import StoreError, open_store
from gateway.state.relay_queue import DeadLetter, RelayQueueStore


def add_parser(sub: Any, config_help: str) -> None:
    p = sub.add_parser("relay", help="the push relay's dead letters: deliveries that "
                       "exhausted their attempts (list, show, replay, drop), per tenant")
    actions = p.add_subparsers(dest="action", required=True)
    for name, what in (("list", "list the tenant's dead letters, newest first"),
                       ("show", "show one dead letter (body, attempts, last status)"),
                       ("replay", "queue one dead letter again (same webhook-id)"),
                       ("drop", "forget one dead letter")):
        a = actions.add_parser(name, help=what)
        a.add_argument("--config", help=config_help)
        a.add_argument("--tenant", required=True, help="the tenant whose dead letters")
        if name == "list":
            a.add_argument("--limit", type=int, default=100, help="at most this many "
                           "(default: %(default)s)")
        else:
            a.add_argument("webhook_id", help="the delivery's webhook-id (from `list`)")
        a.set_defaults(func=run, config_arg="config")


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _summary(letter: DeadLetter, sealer: Sealer) -> dict[str, Any]:
    d = letter.delivery
    try:
        webhook = webhook_host(sealer.open(d.item.sealed, check_age=False).url)
    except SealError:
        webhook = "<relay URL no longer opens>"
    return {"webhook_id": d.item.webhook_id, "task_id": d.item.task_id, "webhook": webhook,
            "attempts": d.attempts, "last_status": d.last_status, "last_error": d.last_error,
            "died_at": _when(letter.died_at), "expires_at": _when(letter.expires_at)}


async def _act(args: argparse.Namespace, queue: RelayQueueStore, sealer: Sealer) -> int:
    if args.action == "list":
        for letter in await queue.relay_dead(args.tenant, args.limit):
            s = _summary(letter, sealer)
            print(f"{s['webhook_id']}  task {s['task_id']}  {s['webhook']}  "
                  f"attempts {s['attempts']}  status {s['last_status']}  died {s['died_at']}"
                  f"  {s['last_error']}")
        return 0
    if args.action == "show":
        found = await queue.relay_dead_get(args.tenant, args.webhook_id)
        if found is None:
            return _none(args)
        shown = _summary(found, sealer)
        body = found.delivery.item.body
        shown["body"] = None if body is None else json.loads(body)  # None: a v0.3 snapshot
        print(json.dumps(shown, indent=2, sort_keys=True))
        return 0
    done = await (queue.relay_replay if args.action == "replay" else queue.relay_drop)(
        args.tenant, args.webhook_id)
    if not done:
        return _none(args)
    print(f"{args.webhook_id}: {'queued again' if args.action == 'replay' else 'dropped'}")
    return 0


def _none(args: argparse.Namespace) -> int:
    print(f"a2a-gateway: tenant {args.tenant!r} has no dead letter {args.webhook_id!r}",
          file=sys.stderr)
    return 1


async def _main(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    keys, _ = load_keys(config.push_relay)
    sealer = Sealer(keys, config.push_relay.seal_max_age)
    store = open_store(config.state)
    try:
        if not isinstance(store, RelayQueueStore):
            raise ConfigError(f"state.backend {config.state.backend} keeps no relay queue")
        return await _act(args, store, sealer)
    finally:
        await store.close()


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_main(args))
    except StoreError as exc:
        print(f"a2a-gateway: {exc}", file=sys.stderr)
        return 1
