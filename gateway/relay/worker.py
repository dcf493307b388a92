"""The relay worker: delivers what the durable queue holds (gateway/state/relay_queue.py).

Every process (worker, replica) runs one. It claims due deliveries — each the oldest of
its lane (relay config and task), so a lane's deliveries go out one at a time, in order
— under a lease, and for each:

- opens its seal (the client's webhook, token and credentials, encrypted at rest); a
  seal no configured key opens any more is buried at once;
- makes the body when the queue holds none (a v0.3 snapshot, fetched now: one fetch
  covers the snapshots coalesced into it); a snapshot identical to the one this process
  just delivered on the lane is not sent again;
- waits for one of its destination's slots (``queue.per_destination``) and asks the
  destination's circuit breaker (destinations.py): while it is open the delivery is put
  off, unattempted, to the end of the cool-down;
- makes one attempt (delivery.py) and reports it: delivered (forgotten), retried later
  on the schedule, or buried as a dead letter (logged "push relay delivery failed").

It wakes when this process queues a delivery, and otherwise looks every ``queue.poll``
seconds (deliveries other processes queued, retries that came due, leases that ran out).
A store that fails is logged and tried again at the next look; nothing is lost (the
lease runs out, another look claims it again).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections import OrderedDict
from typing import Any

import structlog
from a2a.types import a2a_pb2 as pb

from gateway.config.models import PushRelayConfig
from gateway.observability.metrics import PUSH_CIRCUIT_OPENINGS, PUSH_CIRCUITS_OPEN
from gateway.relay import trace_context
from gateway.relay.delivery import Deliverer, Outcome, RelayCounters, backoff, log_fields
from gateway.relay.destinations import Breakers, Slots, Verdict, destination
from gateway.relay.seals import Sealer, SealError
from gateway.state.base import StoreError
from gateway.state.relay_queue import QueuedDelivery, RelayQueueStore
from translators.json_text import dump_bytes
from translators.loss import LossReport
from translators.webhooks import RelayTarget

# Seconds deliveries in flight get to finish when the gateway stops; the rest keep their
# place in the queue (another look, here or elsewhere, claims them when the lease ends).
SHUTDOWN_GRACE = 5.0
_REMEMBERED_SNAPSHOTS = 4096
# Seconds a woken worker waits for other wakes before it looks at the queue.
_GATHER = 0.002


def _log() -> Any:
    return structlog.get_logger("a2a_gateway.push_relay")


class RelayWorker:
    def __init__(self, queue: RelayQueueStore, settings: PushRelayConfig, sealer: Sealer,
                 deliverer: Deliverer, counters: RelayCounters) -> None:
        self.queue = queue
        self.settings = settings
        self.sealer = sealer
        self.deliverer = deliverer
        self.counters = counters
        self._wake = asyncio.Event()
        self._stopping = False
        self._loop: asyncio.Task[None] | None = None
        self._busy: dict[str, asyncio.Task[None]] = {}  # lane → its delivery in flight
        self._claimed: dict[asyncio.Task[None], int] = {}  # the delivery each one makes
        # Digest of the last snapshot delivered per lane, least recent first.
        self._last_snapshot: OrderedDict[str, str] = OrderedDict()
        self.slots = Slots(settings.queue.per_destination)
        breaker = settings.queue.breaker
        self.breakers = Breakers(breaker.failures, breaker.cool_down, settings.timeout)
        # How long a claimed delivery waits for a slot before it is given back: well
        # within its lease, which must still cover the attempt.
        self._patience = (settings.queue.lease - settings.timeout) / 2

    def start(self) -> None:
        if self._loop is None:
            self._loop = asyncio.create_task(self._run(), name="push-relay-worker")

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        poll = self.settings.queue.poll
        while not self._stopping:
            wait = poll
            PUSH_CIRCUITS_OPEN.set(self.breakers.open_count())
            try:
                free = self.settings.queue.concurrency - len(self._busy)
                if free > 0:  # else a delivery that ends wakes the loop
                    # A read first: an idle queue costs no write transaction a look.
                    due = await self.queue.relay_next_due()
                    if due == 0:
                        claimed = await self.queue.relay_claim(
                            free, self.settings.queue.lease, frozenset(self._busy))
                        for d in claimed:
                            self._spawn(d)
                        due = None if len(claimed) == free else \
                            await self.queue.relay_next_due()
                    if due is not None and due > 0:
                        wait = min(poll, due)
            except StoreError as exc:
                _log().warning("push relay queue unavailable; looking again",
                               error=str(exc))
            # asyncio.wait, not wait_for: Python 3.11's wait_for can swallow the
            # cancellation that stops this loop when the wake comes at the same moment.
            waiter = asyncio.ensure_future(self._wake.wait())
            try:
                done, _ = await asyncio.wait({waiter}, timeout=max(wait, 0.005))
            finally:
                waiter.cancel()
            if not done:
                continue
            # Woken (a delivery queued here, or one ended): wakes that come together, as
            # deliveries ending in a burst, share one look (a store round trip each).
            await asyncio.sleep(_GATHER)
            self._wake.clear()

    def _spawn(self, d: QueuedDelivery) -> None:
        lane = d.item.lane
        task = asyncio.create_task(self._deliver(d), name=f"push-relay-{d.item.task_id}")
        self._busy[lane] = task
        self._claimed[task] = d.id

        def done(_: asyncio.Task[None]) -> None:
            self._claimed.pop(task, None)
            if self._busy.get(lane) is task:
                del self._busy[lane]
            self._wake.set()  # the lane's next delivery may go now
        task.add_done_callback(done)

    async def _deliver(self, d: QueuedDelivery) -> None:
        item = d.item
        trace_context.adopt(json.loads(item.trace or "{}"))
        dropped: list[str] = json.loads(item.dropped or "[]")
        fields: dict[str, Any] = {"tenant": item.tenant, "task_id": item.task_id,
                                  "webhook_id": item.webhook_id}
        try:
            try:
                target = self.sealer.open(item.sealed, check_age=False)
            except SealError as exc:
                # No configured key opens it any more (rotated out): nowhere to deliver.
                error = f"relay URL no longer opens: {exc}"
                await self.queue.relay_bury(d.id, 0, error, None,
                                            self.settings.queue.dead_letter_ttl)
                self.counters.bump("failed")
                _log().warning("push relay delivery failed", **fields, error=error)
                return
            fields = {**log_fields(target, item.task_id, d.attempts + 1, dropped),
                      "webhook_id": item.webhook_id}
            dest = destination(target.url)
            async with self.slots.hold(dest, self._patience) as held:
                if not held:  # its lease must not run out while it waits: others may go
                    await self.queue.relay_release([d.id])
                    return
                put_off = self.breakers.admit(dest)
                if put_off > 0:
                    await self.queue.relay_postpone(d.id, put_off)
                    self.counters.bump("postponed")
                    return
                await self._attempt(d, target, dest, fields)
        except StoreError as exc:
            _log().warning("push relay could not record a delivery's outcome; it is tried "
                           "again when its lease ends", **fields, error=str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug of ours must not go unnoticed, nor kill the worker
            _log().exception("push relay delivery broke", **fields, error=str(exc))
            # Counted as an attempt: a delivery that always breaks ends as a dead letter
            # instead of being claimed again for ever.
            with contextlib.suppress(StoreError):
                await self._report(d, Outcome(0, f"{type(exc).__name__}: {exc}", True), None,
                                   None, fields)

    async def _attempt(self, d: QueuedDelivery, target: RelayTarget, dest: str,
                       fields: dict[str, Any]) -> None:
        """Make the body if the queue holds none, POST it once, tell the breaker and the
        queue what came of it."""
        item = d.item
        data, snapshot = item.body, None
        if data is None:
            loss = LossReport()
            body = await self.deliverer.snapshot(target, pb.StreamResponse.FromString(
                item.event), item.task_id, loss)
            data = dump_bytes(body)
            snapshot = hashlib.sha256(data).hexdigest()
            if snapshot == self._last_snapshot.get(item.lane):
                # Fetched after the same change as the one just delivered.
                self.counters.bump("coalesced")
                await self.queue.relay_done(d.id)
                return
        outcome = await self.deliverer.attempt(target, data, item.webhook_id,
                                               d.attempts + 1)
        self._judge(dest, outcome)
        await self._report(d, outcome, snapshot, data if item.body is None else None,
                           fields)

    def _judge(self, dest: str, outcome: Outcome) -> None:
        verdict: Verdict = "up" if outcome.ok or (outcome.status and not outcome.retry) \
            else "down" if outcome.retry else "unknown"  # unknown: the SSRF guard said no
        change = self.breakers.record(dest, verdict)
        if change is None:
            return
        PUSH_CIRCUITS_OPEN.set(self.breakers.open_count())
        if change == "closed":
            _log().info("push relay circuit closed", destination=dest)
            return
        PUSH_CIRCUIT_OPENINGS.inc()
        _log().warning("push relay circuit opened", destination=dest,
                       probe_failed=change == "reopened", failures=self.breakers.failures,
                       cool_down=self.breakers.cool_down)

    async def _report(self, d: QueuedDelivery, outcome: Outcome, snapshot: str | None,
                      made: bytes | None, fields: dict[str, Any]) -> None:
        attempts = d.attempts + 1
        if outcome.ok:
            await self.queue.relay_done(d.id)
            if snapshot is not None:
                self._last_snapshot[d.item.lane] = snapshot
                self._last_snapshot.move_to_end(d.item.lane)
                if len(self._last_snapshot) > _REMEMBERED_SNAPSHOTS:
                    self._last_snapshot.popitem(last=False)
            self.counters.bump("delivered")
            _log().info("push relay delivered", **fields)
            return
        if outcome.retry and attempts <= self.settings.retries:
            delay = backoff(self.settings, attempts, outcome.retry_after)
            await self.queue.relay_retry(d.id, delay, outcome.status, outcome.error, made)
            self.counters.bump("retried")
            _log().info("push relay delivery will be retried", **fields,
                        error=outcome.error, retry_in=round(delay, 3))
            return
        await self.queue.relay_bury(d.id, outcome.status, outcome.error, made,
                                    self.settings.queue.dead_letter_ttl)
        self.counters.bump("failed")
        _log().warning("push relay delivery failed", **fields, status=outcome.status,
                       error=outcome.error, dead_letter=True)

    async def close(self) -> None:
        self._stopping = True
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None
        busy = set(self._busy.values())
        if busy:
            _, pending = await asyncio.wait(busy, timeout=SHUTDOWN_GRACE)
            unfinished = [self._claimed[task] for task in pending if task in self._claimed]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if pending:
                _log().warning("push relay stopped with deliveries in flight; they stay "
                               "queued", deliveries=len(pending))
            try:
                await self.queue.relay_release(unfinished)
            except StoreError as exc:  # their leases run out instead
                _log().warning("push relay could not release its deliveries",
                               error=str(exc))
