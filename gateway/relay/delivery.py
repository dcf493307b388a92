"""Delivery to the client's webhook, in the background.

The relay endpoint (gateway/ingress/relay.py) has checked the seal, the relay token and the body,
and answered the backend 202; then:

- the body is translated for the client's version (translators/webhooks.py); a v0.3
  client gets a Task, so a v1.0 status/artifact/message event is turned into the Task
  snapshot it implies, fetched with GetTask through the tenant's backend (falling back
  to what the event carries when the backend cannot be asked);
- notifications for one config and task go out one at a time, in the order they came;
  v0.3 snapshots still waiting for their turn absorb later events (one fresh fetch
  covers them all), and a snapshot identical to the one just delivered is not sent
  again;
- each delivery is retried `retries` times with exponential backoff on connection
  errors, timeouts, 408/425/429 and 5xx. A delivery that finally fails is logged (one
  line: tenant, task, webhook host, attempts, last error; never tokens or credentials)
  and counted in :data:`COUNTERS`.

On shutdown, deliveries in flight get a few seconds, then are cancelled and logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from a2a.types import a2a_pb2 as pb

from gateway.config.models import PushRelayConfig
from gateway.observability.metrics import PUSH_DELIVERIES
from gateway.relay import trace_context
from gateway.relay.guard import WebhookGuard, WebhookRefused, refusal_in
from translators.errors import A2AError
from translators.json_text import dump_bytes
from translators.loss import LossReport
from translators.vocabulary import JSON
from translators.webhooks import (
    RelayTarget,
    delivery_headers,
    event_task_id,
    implied_task,
    snapshot_body,
)

# (tenant, task id, the client's version) → the task as the tenant's backend has it now.
FetchTask = Callable[[str, str, str], Awaitable[pb.Task | None]]
# Seconds deliveries in flight get to finish when the gateway stops.
SHUTDOWN_GRACE = 5.0
_MAX_BACKOFF = 60.0
_RETRY_STATUSES = frozenset({408, 425, 429})
_REMEMBERED_SNAPSHOTS = 4096


def _log() -> Any:
    # A fresh proxy per line: tests capture with structlog.testing.capture_logs().
    return structlog.get_logger("a2a_gateway.push_relay")


@dataclass
class RelayCounters:
    """Process-wide relay counters; :meth:`bump` also feeds the Prometheus counter
    `a2a_gateway_push_deliveries_total{outcome}` (gateway/observability/metrics.py)."""

    accepted: int = 0  # notifications a backend posted and the relay took on
    delivered: int = 0  # reached the client's webhook (2xx)
    failed: int = 0  # given up on (each one logged)
    retried: int = 0  # attempts after the first
    refused: int = 0  # backend posts refused: bad seal or relay token (403), spent (410)
    coalesced: int = 0  # v0.3 snapshots merged into one already waiting
    duplicate: int = 0  # the same notification posted again: taken, not delivered twice

    def bump(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)
        PUSH_DELIVERIES.labels(outcome).inc()


COUNTERS = RelayCounters()


def webhook_host(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    except ValueError:
        return "<unparseable>"


def _fields(target: RelayTarget, task_id: str, attempts: int,
            loss: LossReport | None) -> dict[str, Any]:
    """The log fields of one delivery: never the URL's path or query, tokens or
    credentials."""
    fields: dict[str, Any] = {
        "tenant": target.tenant, "task_id": task_id, "config_id": target.config_id,
        "webhook": webhook_host(target.url), "client_version": target.client_version,
        "backend_version": target.backend_version, "attempts": attempts}
    if loss is not None and loss.dropped:
        fields["dropped"] = list(loss.dropped)
    return fields


@dataclass
class _KeyState:
    """Deliveries for one (relay config, task): serialized, v0.3 snapshots coalesced."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    snapshot_waiting: bool = False


class Delivery:
    def __init__(self, settings: PushRelayConfig, guard: WebhookGuard, fetch_task: FetchTask,
                 counters: RelayCounters) -> None:
        self.settings = settings
        self.guard = guard
        self.fetch_task = fetch_task
        self.counters = counters
        self._tasks: set[asyncio.Task[None]] = set()
        self._keys: dict[tuple[str, str], _KeyState] = {}
        # Digest of the last snapshot delivered per (config, task), least recent first.
        self._last_snapshot: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    # ------------------------------------------------------------ scheduling

    def submit(self, sealed: str, target: RelayTarget, event: pb.StreamResponse,
               body: JSON | None, loss: LossReport) -> None:
        """Deliver ``body`` (or, when None, the Task snapshot ``event`` implies); ``loss``
        holds what translating the body dropped (logged with the delivery)."""
        task_id = event_task_id(event)
        if self._closed:
            self.report_failure(target, task_id, 0, "gateway shutting down", loss)
            return
        key = (sealed, task_id)
        state = self._keys.setdefault(key, _KeyState())
        if body is None:
            if state.snapshot_waiting:
                self.counters.bump("coalesced")
                _log().debug("push relay snapshot coalesced", tenant=target.tenant,
                             task_id=task_id)
                return
            state.snapshot_waiting = True
        state.users += 1
        task = asyncio.create_task(self._run(key, state, target, event, body, loss),
                                   name=f"push-relay-{task_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, key: tuple[str, str], state: _KeyState, target: RelayTarget,
                   event: pb.StreamResponse, body: JSON | None, loss: LossReport) -> None:
        task_id = key[1]
        attempts, error = 0, ""
        try:
            async with state.lock:
                snapshot = None
                if body is None:
                    state.snapshot_waiting = False
                    body = await self._snapshot(target, event, task_id, loss)
                    snapshot = hashlib.sha256(json.dumps(body, sort_keys=True).encode()
                                              ).hexdigest()
                    if snapshot == self._last_snapshot.get(key):
                        # Fetched after the same change as the one just delivered.
                        self.counters.bump("coalesced")
                        return
                attempts, error = await trace_context.delivery(target, self._post(target, body))
                if snapshot is not None and not error:
                    self._last_snapshot[key] = snapshot
                    self._last_snapshot.move_to_end(key)
                    if len(self._last_snapshot) > _REMEMBERED_SNAPSHOTS:
                        self._last_snapshot.popitem(last=False)
        except asyncio.CancelledError:
            self.report_failure(target, task_id, attempts, "gateway shut down before delivery",
                                loss)
            raise
        except Exception as exc:  # a bug of ours must not go unnoticed, nor kill the loop
            self.report_failure(target, task_id, attempts, f"{type(exc).__name__}: {exc}", loss)
            return
        finally:
            state.users -= 1
            if state.users == 0 and self._keys.get(key) is state:
                del self._keys[key]
        if error:
            self.report_failure(target, task_id, attempts, error, loss)
        else:
            self.counters.bump("delivered")
            _log().info("push relay delivered", **_fields(target, task_id, attempts, loss))

    def report_failure(self, target: RelayTarget, task_id: str, attempts: int, error: str,
                       loss: LossReport | None = None) -> None:
        self.counters.bump("failed")
        _log().warning("push relay delivery failed", **_fields(target, task_id, attempts, loss),
                       error=error)

    # ------------------------------------------------------------ the work

    async def _snapshot(self, target: RelayTarget, event: pb.StreamResponse, task_id: str,
                        loss: LossReport) -> JSON:
        task: pb.Task | None = None
        if task_id:
            try:
                task = await self.fetch_task(target.tenant, task_id, target.client_version)
            except A2AError as err:
                _log().warning("push relay could not fetch the task; delivering what the "
                               "event carries", tenant=target.tenant, task_id=task_id,
                               error=err.kind.reason, error_message=err.message)
        return snapshot_body(task if task is not None else implied_task(event),
                             target.client_version, loss)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(resolver=self.guard.resolver(), limit=256,
                                             limit_per_host=16)
            # No cookie jar: one receiver's cookie must not follow other clients' deliveries.
            self._session = aiohttp.ClientSession(connector=connector,
                                                  cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def _post(self, target: RelayTarget, body: JSON) -> tuple[int, str]:
        """POST with retries; (attempts, last error or "" on success)."""
        data = dump_bytes(body)
        headers = {**delivery_headers(target), **trace_context.delivery_headers()}
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout)
        attempt, error = 0, ""
        for attempt in range(1, self.settings.retries + 2):
            retry = True
            try:
                self.guard.check_literal(target.url)
                async with self._client().post(target.url, data=data, headers=headers,
                                               timeout=timeout, allow_redirects=False) as resp:
                    await resp.read()
                    if 200 <= resp.status < 300:
                        return attempt, ""
                    error = f"HTTP {resp.status}"
                    retry = resp.status >= 500 or resp.status in _RETRY_STATUSES
            except WebhookRefused as exc:
                error, retry = f"refused by the SSRF guard: {exc}", False
            except TimeoutError:
                error = f"no answer within {self.settings.timeout:g}s"
            except aiohttp.ClientError as exc:
                refused = refusal_in(exc)
                if refused is not None:
                    error, retry = f"refused by the SSRF guard: {refused}", False
                else:
                    error = (f"{type(exc).__name__}: {exc}".replace(target.url,
                                                                    webhook_host(target.url)))
            if not retry or attempt > self.settings.retries:
                break
            self.counters.bump("retried")
            await asyncio.sleep(min(_MAX_BACKOFF, self.settings.backoff * 2 ** (attempt - 1)))
        return attempt, error

    async def close(self) -> None:
        self._closed = True
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=SHUTDOWN_GRACE)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None
