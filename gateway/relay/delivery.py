"""One delivery attempt to the client's webhook, and the schedule between attempts.

The relay endpoint (gateway/ingress/relay.py) stores each notification in the durable
queue (gateway/state/relay_queue.py) before it answers the backend; the relay worker
(gateway/relay/worker.py) claims it from there and asks :class:`Deliverer` to:

- make the body, when the queue holds none: a v0.3 client gets a Task, so a v1.0
  status/artifact/message event is turned into the Task snapshot it implies, fetched
  with GetTask through the tenant's backend (falling back to what the event carries
  when the backend cannot be asked);
- POST it once, with the client's headers, the stable ``webhook-id``, the tenant's
  Standard Webhooks signature when it signs (signing.py: a fresh timestamp and signature
  per attempt, over the exact bytes sent) and the trace context, and tell what came of it (:class:`Outcome`): 2xx is success; timeouts,
  connection errors, 408/425/429 and 5xx may be tried again (after ``Retry-After`` when
  the receiver said so); any other answer, or the SSRF guard's refusal, may not.

:func:`backoff` is the schedule: ``backoff`` seconds doubling per attempt up to
``queue.max_backoff``, moved by up to ``queue.jitter`` either way.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from a2a.types import a2a_pb2 as pb

from gateway.config.models import PushRelayConfig
from gateway.observability.metrics import PUSH_DELIVERIES
from gateway.relay import trace_context
from gateway.relay.guard import WebhookGuard, WebhookRefused, refusal_in
from gateway.relay.signing import WebhookSigner, signing_headers
from translators.errors import A2AError
from translators.loss import LossReport
from translators.vocabulary import JSON
from translators.webhooks import RelayTarget, delivery_headers, implied_task, snapshot_body

# (tenant, task id, the client's version) → the task as the tenant's backend has it now.
FetchTask = Callable[[str, str, str], Awaitable[pb.Task | None]]
_RETRY_STATUSES = frozenset({408, 425, 429})
# The header receivers dedupe by (Standard Webhooks' name): the same on every attempt.
WEBHOOK_ID = "webhook-id"


def _log() -> Any:
    # A fresh proxy per line: tests capture with structlog.testing.capture_logs().
    return structlog.get_logger("a2a_gateway.push_relay")


@dataclass
class RelayCounters:
    """Process-wide relay counters; :meth:`bump` also feeds the Prometheus counter
    `a2a_gateway_push_deliveries_total{outcome}` (gateway/observability/metrics.py)."""

    accepted: int = 0  # notifications a backend posted and the relay queued
    delivered: int = 0  # reached the client's webhook (2xx)
    failed: int = 0  # given up on: dead letters (each one logged)
    retried: int = 0  # attempts after the first
    refused: int = 0  # backend posts refused: bad seal or relay token (403), spent (410)
    coalesced: int = 0  # v0.3 snapshots merged into one already waiting
    duplicate: int = 0  # the same notification posted again: taken, not delivered twice
    postponed: int = 0  # put off unattempted: their destination's circuit is open

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


def log_fields(target: RelayTarget, task_id: str, attempts: int,
               dropped: list[str]) -> dict[str, Any]:
    """The log fields of one delivery: never the URL's path or query, tokens or
    credentials."""
    fields: dict[str, Any] = {
        "tenant": target.tenant, "task_id": task_id, "config_id": target.config_id,
        "webhook": webhook_host(target.url), "client_version": target.client_version,
        "backend_version": target.backend_version, "attempts": attempts}
    if dropped:
        fields["dropped"] = dropped
    return fields


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to."""

    status: int = 0  # the HTTP status (0: no answer)
    error: str = ""  # "" on success
    retry: bool = False  # worth another attempt
    retry_after: float | None = None  # seconds the receiver asked for (Retry-After)

    @property
    def ok(self) -> bool:
        return not self.error


def retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delay-seconds or an HTTP date; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - time.time())


def backoff(settings: PushRelayConfig, attempts: int, asked: float | None) -> float:
    """Seconds before the next attempt once ``attempts`` were made: what the receiver
    asked for (Retry-After), else ``backoff`` doubling per attempt; both capped at
    ``queue.max_backoff``. Jitter spreads only our own schedule, never a Retry-After."""
    cap = settings.queue.max_backoff
    if asked is not None:
        return min(cap, asked)
    base = min(cap, settings.backoff * 2 ** max(0, attempts - 1))
    spread = settings.queue.jitter
    # Jitter, not a secret: the random module is the right one.
    return float(base * random.uniform(1 - spread, 1 + spread))


class Deliverer:
    """The HTTP side of deliveries: one connection pool through the SSRF guard's
    resolver, no cookies."""

    def __init__(self, settings: PushRelayConfig, guard: WebhookGuard,
                 fetch_task: FetchTask,
                 signers: Mapping[str, WebhookSigner] | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.fetch_task = fetch_task
        self.signers: Mapping[str, WebhookSigner] = signers or {}  # by tenant
        self._session: aiohttp.ClientSession | None = None

    async def snapshot(self, target: RelayTarget, event: pb.StreamResponse, task_id: str,
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
            connector = aiohttp.TCPConnector(
                resolver=self.guard.resolver(), limit=256,
                limit_per_host=self.settings.queue.per_destination)
            # No cookie jar: one receiver's cookie must not follow other clients' deliveries.
            self._session = aiohttp.ClientSession(connector=connector,
                                                  cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def attempt(self, target: RelayTarget, data: bytes, webhook_id: str,
                      number: int) -> Outcome:
        """POST ``data`` once (attempt ``number``, counted from 1), inside its span."""
        found: list[Outcome] = []

        async def post() -> tuple[int, str]:
            found.append(await self._post(target, data, webhook_id))
            return number, found[0].error
        await trace_context.delivery(target, post())
        return found[0]

    async def _post(self, target: RelayTarget, data: bytes, webhook_id: str) -> Outcome:
        headers = {**delivery_headers(target), WEBHOOK_ID: webhook_id,
                   **signing_headers(self.signers, target.tenant, webhook_id, data,
                                     int(time.time())),
                   **trace_context.delivery_headers()}
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout)
        try:
            self.guard.check_literal(target.url)
            async with self._client().post(target.url, data=data, headers=headers,
                                           timeout=timeout, allow_redirects=False) as resp:
                await resp.read()
                if 200 <= resp.status < 300:
                    return Outcome(resp.status)
                return Outcome(resp.status, f"HTTP {resp.status}",
                               resp.status >= 500 or resp.status in _RETRY_STATUSES,
                               retry_after(resp.headers.get("Retry-After")))
        except WebhookRefused as exc:
            return Outcome(0, f"refused by the SSRF guard: {exc}")
        except TimeoutError:
            return Outcome(0, f"no answer within {self.settings.timeout:g}s", True)
        except aiohttp.ClientError as exc:
            refused = refusal_in(exc)
            if refused is not None:
                return Outcome(0, f"refused by the SSRF guard: {refused}")
            return Outcome(0, f"{type(exc).__name__}: {exc}".replace(
                target.url, webhook_host(target.url)), True)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
