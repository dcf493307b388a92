"""Bounded capacity: how many calls and streams may be open at once, gateway-wide, per
tenant and per backend address, and how long a call may wait for a free slot.

A slot that does not free up within the wait is a ResourceExhaustedError in the caller's
dialect (HTTP 429 with Retry-After, gRPC RESOURCE_EXHAUSTED, JSON-RPC -32603 with the
ErrorInfo reason RESOURCE_EXHAUSTED), never a silent queue: a stream that stays open for
hours must not make a unary call wait, and a busy backend must not look like a dead one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from prometheus_client import Gauge

from gateway.config.models import BackendConfig, GatewayConfig
from gateway.observability.metrics import LIMIT_REFUSALS, move_gauge
from gateway.routing.tenants import TenantRoute
from translators.errors import A2AError, a2a_error

IN_USE = Gauge("a2a_gateway_limit_in_use", "Slots held now, by limit",
               ["limit", "scope"], multiprocess_mode="livesum")
# Summed over live workers, as IN_USE is: each worker holds its own slots.
CAPACITY = Gauge("a2a_gateway_limit_capacity", "Slots a limit allows",
                 ["limit", "scope"], multiprocess_mode="livesum")

# Seconds a refused caller is told to wait before retrying (Retry-After).
RETRY_AFTER_SECONDS = 1


class Slots:
    """At most ``size`` holders at once; a caller waits at most ``wait`` seconds."""

    def __init__(self, limit: str, scope: str, size: int) -> None:
        self.limit = limit
        self.scope = scope
        self.size = size
        self._free = asyncio.Semaphore(size)
        self._in_use = IN_USE.labels(limit, scope)
        CAPACITY.labels(limit, scope).set(size)

    def _refusal(self, wait: float) -> A2AError:
        LIMIT_REFUSALS.labels(self.limit, self.scope).inc()
        waited = f" within {wait:g} s" if wait > 0 else ""
        return a2a_error("ResourceExhaustedError", f"the gateway's limit {self.limit} "
                         f"({self.size}) for {self.scope} is reached and no slot freed "
                         f"up{waited}; retry later", limit=self.limit,
                         retry_after=RETRY_AFTER_SECONDS)

    def hold(self, wait: float) -> AbstractAsyncContextManager[None]:
        return _Hold(self, wait)

    async def _wait_for_slot(self, wait: float) -> None:
        """A slot when none is free now: within ``wait`` seconds, or refused."""
        if wait <= 0:
            raise self._refusal(wait)
        try:
            async with asyncio.timeout(wait):
                await self._free.acquire()
        except TimeoutError:
            raise self._refusal(wait) from None

    def _release(self) -> None:
        self._free.release()
        move_gauge(self._in_use, -1)


class _Hold:
    """One slot of :class:`Slots` while the block runs (a class, not a generator-based
    context manager: every call enters one). It keeps no state of its own: one object
    may be entered by any number of calls at once."""

    __slots__ = ("_slots", "_wait")

    def __init__(self, slots: Slots, wait: float) -> None:
        self._slots = slots
        self._wait = wait

    async def __aenter__(self) -> None:
        # Inline, not a coroutine of the Slots' own: every call enters one.
        slots = self._slots
        if slots._free.locked():
            await slots._wait_for_slot(self._wait)
        else:
            await slots._free.acquire()
        # With the pass's other counts (gateway/observability/metrics.py, _Batch): a
        # gauge's inc locks and checks as a counter's does, twice per call.
        move_gauge(slots._in_use, 1)

    async def __aexit__(self, *exc: object) -> None:
        self._slots._release()


class CallLimits:
    """The slots of one config: open streams gateway-wide and per tenant, and per backend
    address the unary calls in flight and the open streams (tenants that share a backend
    address share its slots, with the smallest size any of them configures)."""

    def __init__(self, config: GatewayConfig) -> None:
        self.wait = config.limits.pool_wait
        self._streams = Slots("max_streams", "gateway", config.limits.max_streams)
        self._tenant_streams = {
            name: Slots("tenant.max_streams", name, t.max_streams)
            for name, t in config.tenants.items() if t.max_streams is not None}
        by_address: dict[str, list[BackendConfig]] = {}
        for t in config.tenants.values():
            by_address.setdefault(_address(t.backend), []).append(t.backend)
            if t.migration is not None:  # the candidate's own slots
                by_address.setdefault(_address(t.migration.candidate), []).append(
                    t.migration.candidate)
        self._calls = {a: Slots("backend.max_calls", a, min(b.max_calls for b in bs))
                       for a, bs in by_address.items()}
        self._backend_streams = {a: Slots("backend.max_streams", a,
                                          min(b.max_streams for b in bs))
                                 for a, bs in by_address.items()}
        # A hold keeps nothing of the call that enters it: one per address serves every
        # unary call (not one made per call).
        self._call_holds = {a: slots.hold(self.wait) for a, slots in self._calls.items()}

    def call(self, route: TenantRoute) -> AbstractAsyncContextManager[None]:
        return self._call_holds[_address(route.config)]

    @asynccontextmanager
    async def stream(self, route: TenantRoute) -> AsyncIterator[None]:
        async with AsyncExitStack() as held:
            await held.enter_async_context(self._streams.hold(self.wait))
            tenant = self._tenant_streams.get(route.name)
            if tenant is not None:
                await held.enter_async_context(tenant.hold(self.wait))
            await held.enter_async_context(
                self._backend_streams[_address(route.config)].hold(self.wait))
            yield


def _address(config: BackendConfig) -> str:
    return str(config.url or config.card)
