"""`a2a-gateway relay list|show|replay|drop`: the push relay's dead letters, per tenant
(docs/push-relay.md, "Dead letters"). Reads the store the config names, as the running
gateway does; a replayed delivery is queued again and the gateway's relay worker sends it
at its next look at the queue (`push_relay.queue.poll`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from gateway.config.models import ConfigError, load_config
from gateway.relay import dead_letters
from gateway.relay.seals import Sealer, load_keys
from gateway.state import StoreError, open_store
from gateway.state.relay_queue import RelayQueueStore


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


async def _act(args: argparse.Namespace, queue: RelayQueueStore, sealer: Sealer) -> int:
    if args.action == "list":
        for s in await dead_letters.listing(queue, sealer, args.tenant, args.limit):
            print(f"{s['webhook_id']}  task {s['task_id']}  {s['webhook']}  "
                  f"attempts {s['attempts']}  status {s['last_status']}  died {s['died_at']}"
                  f"  {s['last_error']}")
        return 0
    if args.action == "show":
        shown = await dead_letters.show(queue, sealer, args.tenant, args.webhook_id)
        if shown is None:
            return _none(args)
        print(json.dumps(shown, indent=2, sort_keys=True))
        return 0
    if not await dead_letters.act(queue, args.action, args.tenant, args.webhook_id):
        return _none(args)
    print(f"{args.webhook_id}: {'queued again' if args.action == 'replay' else 'dropped'}")
    return 0


def _none(args: argparse.Namespace) -> int:
    print(f"a2a-gateway: {dead_letters.missing(args.tenant, args.webhook_id)}",
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
