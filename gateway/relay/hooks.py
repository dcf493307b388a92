"""The webhook relay's two pipeline hooks (README "Push notifications").

A v1.0 client expects StreamResponse bodies and `Authorization`; a v0.3 client expects
a bare Task and `X-A2A-Notification-Token`. When the two sides differ (or always, if
configured), the gateway registers its own relay URL with the backend instead of the
client's webhook, and delivers what the backend posts there in the client's version.

- :meth:`PushRelay.rewrite_request` (push-config create, and the inline config of
  SendMessage / SendStreamingMessage): the SSRF guard checks the client's webhook, a
  relay URL of this gateway's own is refused (a seal is no webhook), and when relaying,
  the config is pointed at a new seal bound to the call's tenant and task.
- :meth:`PushRelay.restore_response` (create, get and list): a config pointing at a
  relay gets the client's own URL, token and authentication back, only when the seal was
  made for this tenant and this task by this caller; any other config answered has its
  credentials removed (translators.webhooks.shown_config, the one rule).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import GatewayConfig
from gateway.relay.delivery import COUNTERS, Deliverer, FetchTask
from gateway.relay.guard import WebhookGuard
from gateway.relay.seals import Sealer, SealError, load_keys, relay_base, sealed_part
from gateway.relay.signing import load_signers
from gateway.relay.state import RelayState
from gateway.relay.worker import RelayWorker
from gateway.state import Store
from gateway.state.relay_queue import Enqueued, NewDelivery, RelayQueueLimits, RelayQueueStore
from translators import operations as ops
from translators.errors import invalid_params
from translators.webhooks import (
    RelayTarget,
    register_relay,
    restore_client_config,
    shown_config,
    target_from_config,
)

log = structlog.get_logger("a2a_gateway.push_relay")


class PushRelay:
    """Seals, the pipeline hooks, the state and the delivery worker of one gateway."""

    def __init__(self, config: GatewayConfig, fetch_task: FetchTask,
                 environ: Mapping[str, str] | None = None, store: Store | None = None,
                 ) -> None:
        self.settings = config.push_relay
        self.enabled = self.settings.enabled
        keys, source = load_keys(self.settings, environ)
        self.key_source = source
        self.sealer = Sealer(keys, self.settings.seal_max_age)
        self.guard = WebhookGuard(self.settings)
        self.base = relay_base(config)
        self.counters = COUNTERS
        self.state = RelayState(store=store)  # a store: shared with replicas
        # Read now (preflight checked them): a reload that rotates keys builds a new relay.
        self.deliverer = Deliverer(self.settings, self.guard, fetch_task,
                                   load_signers(config))
        self._own_queue: Store | None = None
        self._worker: RelayWorker | None = None
        if self.enabled and isinstance(store, RelayQueueStore):
            self._start_worker(store)  # deliveries queued before a restart go out now
        if self.enabled:
            if source == "generated":
                log.warning(
                    "push relay key generated at start: relay URLs stop working when the "
                    "gateway restarts (its workers share the key), and replicas cannot "
                    "deliver each other's; set "
                    f"push_relay.keys or {self.settings.keys_env} to a shared key")
            log.info("push relay ready", relay_base=self.base, keys=len(keys),
                     key_source=source, always=self.settings.always)

    def relays(self, call: Call) -> bool:
        return self.enabled and (self.settings.always
                                 or call.ctx.client_version != call.ctx.outcome.backend_version)

    def concerns(self, call: Call) -> bool:
        """Whether the call carries a push config (the relay checks or seals its URL)."""
        return self._push_config(call) is not None

    @staticmethod
    def _push_config(call: Call) -> pb.TaskPushNotificationConfig | None:
        request: Any = call.request
        if call.op.name == ops.PUSH_CREATE:
            return request  # type: ignore[no-any-return]
        if call.op.name in (ops.SEND, ops.STREAM) and request.HasField("configuration") \
                and request.configuration.HasField("task_push_notification_config"):
            return request.configuration.task_push_notification_config  # type: ignore[no-any-return]
        return None

    async def rewrite_request(self, call: Call) -> None:
        """Before the backend (after the tenant is resolved): check the client's webhook
        and, when relaying, put a seal in its place."""
        cfg = self._push_config(call)
        if cfg is None:
            return
        sealed = sealed_part(cfg.url)
        if sealed is not None and cfg.url.startswith(self.base) and self.sealer.opens(sealed):
            # A seal is no webhook: registering one would make this gateway deliver another
            # client's notifications (and, on get, open its seal) for the caller. (Another
            # gateway's relay URL, in a chain of gateways, is a webhook like any other.)
            raise invalid_params("the webhook URL is a relay URL of this gateway; give your "
                                 "own webhook's URL", field="url")
        relaying = self.relays(call)
        if relaying or self.settings.guard_direct_webhooks:
            await self.guard.check(cfg.url)
        if not relaying:
            return
        backend_version = call.ctx.outcome.backend_version or ""
        target = target_from_config(
            cfg, client_version=call.ctx.client_version, backend_version=backend_version,
            tenant=call.ctx.tenant or "", relay_token=secrets.token_urlsafe(16),
            issued_at=int(time.time()),
            owner=call.ctx.principal.key if call.ctx.principal is not None else "")
        if isinstance(call.request, pb.SendMessageRequest) and not target.task_id:
            # An inline config belongs to the message's task when it names one; a new
            # task's seal is bound to the first task it is used for (gateway/ingress/relay.py).
            target = replace(target, task_id=call.request.message.task_id)
        register_relay(cfg, self.base + self.sealer.seal(target), target.relay_token,
                       backend_version)

    async def rewrite_again(self, call: Call) -> None:
        """The call goes to another backend than the one its push config was rewritten
        for (migration mode's fallback to the primary, gateway/migration/falling_back.py;
        ``call.ctx.outcome`` names the new one): the client's own config back from its
        seal, then rewritten for this backend's version, which may relay where the first
        did not, or seal for another version."""
        cfg = self._push_config(call)
        if cfg is None:
            return
        target = self._opened(cfg) if cfg.url.startswith(self.base) else None
        if target is not None:
            restore_client_config(cfg, target)
        await self.rewrite_request(call)

    def restore_response(self, call: Call, result: ProtoMessage | None) -> ProtoMessage | None:
        """After the backend: each push config answered is what this caller may see of it
        (translators.webhooks.shown_config: the client's own values for its owner,
        credentials removed for anyone else), whatever the backend answered."""
        if result is None or call.op.name not in (ops.PUSH_CREATE, ops.PUSH_GET, ops.PUSH_LIST):
            return result
        configs = list(result.configs) if isinstance(
            result, pb.ListTaskPushNotificationConfigsResponse) else [result]
        # A create not relayed still holds what its caller sent (a relayed one's request
        # holds the relay's token by now: its seal has the client's).
        own = call.request if call.op.name == ops.PUSH_CREATE and not self.relays(call) \
            and isinstance(call.request, pb.TaskPushNotificationConfig) else None
        caller = call.ctx.principal.key if call.ctx.principal is not None else ""
        tenant = call.ctx.tenant or ""
        for cfg in configs:
            if isinstance(cfg, pb.TaskPushNotificationConfig):
                shown = shown_config(cfg, self._opened(cfg), tenant=tenant, caller=caller,
                                     own=own)
                if shown == "another tenant or task":  # a relay URL where it does not belong
                    log.warning("push config holds a relay URL of another tenant or task; "
                                "left sealed", tenant=tenant, task_id=cfg.task_id)
        return result

    def _opened(self, cfg: pb.TaskPushNotificationConfig) -> RelayTarget | None:
        """The config's relay seal, opened; None when its URL is no relay URL of ours."""
        sealed = sealed_part(cfg.url)
        if sealed is None:
            return None
        try:
            return self.sealer.open(sealed, check_age=False)
        except SealError as exc:
            # Another gateway's relay (a chain), or a key rotated out: leave it as it is.
            log.debug("push config keeps a relay URL this gateway cannot open", reason=str(exc))
            return None

    # ------------------------------------------------------------ the queue

    def _start_worker(self, queue: RelayQueueStore) -> RelayWorker:
        worker = RelayWorker(queue, self.settings, self.sealer, self.deliverer, self.counters)
        self._worker = worker
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return worker  # built outside a loop (tests): started at the first enqueue
        worker.start()
        return worker

    def _queue(self) -> tuple[RelayQueueStore, RelayWorker]:
        if self._worker is not None:
            return self._worker.queue, self._worker
        # No store (a relay built alone, in tests): a queue in this process's memory.
        from gateway.state.sqlite_store import SqliteStore

        own = SqliteStore(":memory:")
        self._own_queue = own
        return own, self._start_worker(own)

    def queue_store(self) -> RelayQueueStore:
        """The queue deliveries wait in (and dead letters are kept in)."""
        return self._queue()[0]

    async def enqueue(self, item: NewDelivery) -> Enqueued:
        """Store a notification's delivery (StoreError when the store cannot); the worker
        delivers it."""
        queue, worker = self._queue()
        limits = RelayQueueLimits(self.settings.queue.max_per_tenant,
                                  self.settings.replay_window)
        outcome = await queue.relay_enqueue(item, limits)
        worker.start()
        if outcome == "queued":
            worker.wake()
        return outcome

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.close()
        await self.deliverer.close()
        if self._own_queue is not None:
            await self._own_queue.close()
