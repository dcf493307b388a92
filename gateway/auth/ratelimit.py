"""Traffic limits per tenant and per principal: request rate (token buckets with a
burst) and calls / streams open at once. Process-local here, behind ``BucketStore`` so
the state store replaces it when several processes serve (workers, replicas). Refusals
are ResourceExhaustedError with `limit` and `retry_after` (whole seconds) in the
metadata: HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED, JSON-RPC -32603 with reason
RESOURCE_EXHAUSTED. While the shared store is down, each tenant's `on_store_outage`
says what happens (:class:`StoreOutage`)."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, Protocol

import structlog

from gateway.auth.principal import Principal
from gateway.config.auth import RateLimitsConfig
from gateway.observability.metrics import LIMIT_REFUSALS
from gateway.state import Store, StoreError, store_unavailable
from translators.errors import A2AError, a2a_error

log = structlog.get_logger("a2a_gateway.auth")


class BucketStore(Protocol):
    async def take(self, key: str, rate: float, burst: int) -> float | None:
        """Take one token from ``key``'s bucket: None when taken, else the seconds until
        one is there. StoreError when the buckets cannot be reached."""


class LocalBuckets:
    """Token buckets in this process, at most ``max_keys`` (the least recently used
    bucket goes first; a new bucket starts full)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 100_000) -> None:
        self._clock = clock
        self._max = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def take(self, key: str, rate: float, burst: int) -> float | None:
        return self.take_now(key, rate, burst)

    def take_now(self, key: str, rate: float, burst: int) -> float | None:
        now = self._clock()
        tokens, last = self._buckets.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - last) * rate)
        if tokens >= 1.0 - 1e-9:  # float sums of refills: 0.01 s x 100/s is one token
            self._put(key, tokens - 1.0, now)
            return None
        self._put(key, tokens, now)
        return (1.0 - tokens) / rate

    def _put(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)


class StoreBuckets:
    """Token buckets in the state store: one bucket per key for every worker and replica
    that shares the store (atomic there; Redis uses its own clock)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def take(self, key: str, rate: float, burst: int) -> float | None:
        taken, wait = await self.store.take_tokens(key, rate, float(burst))
        return None if taken else wait


OutagePolicy = Literal["local", "refuse", "allow"]


class StoreOutage:
    """What the rate limits do while the shared store cannot be reached: this process's
    own buckets for `local`, a StoreUnavailableError for `refuse`, nothing for `allow`.
    The outage is logged with its cause when it starts (again every ``log_every``
    seconds while it lasts) and when it ends, not on every call.

    Under `local` and `allow` the store is asked again only ``probe_every`` seconds
    after it failed, the calls in between go straight to the fallback: a store that does
    not answer (a host gone, not a refused connection) would otherwise hold each call for
    the connect timeout. `refuse` asks it every time: a call is refused only on a
    failure seen, and the first call after the store is back succeeds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 log_every: float = 30.0, probe_every: float = 1.0) -> None:
        self.local = LocalBuckets(clock)
        self._clock = clock
        self._log_every = log_every
        self._probe_every = probe_every
        self._logged_at: float | None = None
        self._failed_at: float | None = None

    def skip_store(self, policy: OutagePolicy) -> bool:
        return (policy != "refuse" and self._failed_at is not None
                and self._clock() - self._failed_at < self._probe_every)

    def failed(self, exc: StoreError, policy: OutagePolicy, tenant: str) -> None:
        now = self._failed_at = self._clock()
        if self._logged_at is None or now - self._logged_at >= self._log_every:
            self._logged_at = now
            log.warning("rate limits: state store unavailable", tenant=tenant,
                        on_store_outage=policy, cause=str(exc))

    def answered(self) -> None:
        self._failed_at = None
        if self._logged_at is not None:
            self._logged_at = None
            log.info("rate limits: state store available again")

    def take(self, policy: OutagePolicy, tenant: str, key: str, rate: float,
             burst: int) -> float | None:
        """The fallback's answer to one take (TrafficLimits' BucketStore contract)."""
        if policy == "refuse":
            # Its cause was logged by failed(), once per period.
            raise store_unavailable(f"the gateway cannot check the rate limits of tenant "
                                    f"{tenant} now (its state store is unavailable)")
        if policy == "allow":
            return None
        return self.local.take_now(key, rate, burst)


class Concurrency:
    """How many calls each key holds open now."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}

    def held(self, key: str) -> int:
        return self._held.get(key, 0)

    @contextmanager
    def hold(self, key: str, cap: int | None, refuse: Callable[[], A2AError],
             ) -> Iterator[Callable[[], None]]:
        """A slot under ``key`` for the block; what it yields gives the slot back before
        the block ends (a stream whose client left, read on for the journal)."""
        if cap is not None and self._held.get(key, 0) >= cap:
            raise refuse()
        self._held[key] = self._held.get(key, 0) + 1
        held = True

        def release() -> None:
            nonlocal held
            if not held:
                return
            held = False
            left = self._held[key] - 1
            if left:
                self._held[key] = left
            else:
                del self._held[key]

        try:
            yield release
        finally:
            release()


def exhausted(limit: str, tenant: str, retry_after: float, what: str) -> A2AError:
    LIMIT_REFUSALS.labels(limit, tenant).inc()
    seconds = max(1, math.ceil(retry_after))
    return a2a_error("ResourceExhaustedError", f"{what} (tenant {tenant}); retry in "
                     f"{seconds} s", limit=limit, retry_after=seconds)


def principal_key(principal: Principal | None) -> str:
    return "anonymous" if principal is None else principal.key


class TrafficLimits:
    """One tenant's limits. ``admit`` before a call, ``hold`` around it."""

    def __init__(self, tenant: str, config: RateLimitsConfig | None, buckets: BucketStore,
                 concurrency: Concurrency, outage: StoreOutage | None = None) -> None:
        self.tenant = tenant
        self.config = config or RateLimitsConfig()
        self.buckets = buckets
        self.concurrency = concurrency
        self.outage = outage or StoreOutage()

    async def _take(self, key: str, rate: float, burst: int) -> float | None:
        outage, policy = self.outage, self.config.on_store_outage
        if outage.skip_store(policy):
            return outage.take(policy, self.tenant, key, rate, burst)
        try:
            wait = await self.buckets.take(key, rate, burst)
        except StoreError as exc:
            outage.failed(exc, policy, self.tenant)
            return outage.take(policy, self.tenant, key, rate, burst)
        outage.answered()
        return wait

    async def admit(self, principal: Principal | None) -> None:
        """Take a token from the tenant's bucket and from the principal's."""
        cfg, tenant = self.config, self.tenant
        if cfg.tenant is not None:
            wait = await self._take(f"rate:tenant:{tenant}", cfg.tenant.rate, cfg.tenant.burst)
            if wait is not None:
                raise exhausted("rate_per_tenant", tenant, wait, "the tenant's request rate "
                                f"({cfg.tenant.rate:g}/s, burst {cfg.tenant.burst}) is reached")
        if cfg.principal is not None:
            key = f"rate:principal:{tenant}:{principal_key(principal)}"
            wait = await self._take(key, cfg.principal.rate, cfg.principal.burst)
            if wait is not None:
                raise exhausted("rate_per_principal", tenant, wait, "the caller's request "
                                f"rate ({cfg.principal.rate:g}/s, burst "
                                f"{cfg.principal.burst}) is reached")

    @contextmanager
    def hold(self, principal: Principal | None,
             streaming: bool) -> Iterator[Callable[[], None]]:
        """A slot for one call (or stream) of ``principal`` while it runs."""
        if streaming:
            limit, cap, what = ("max_streams_per_principal",
                                self.config.max_streams_per_principal, "streams")
        else:
            limit, cap, what = ("max_calls_per_principal",
                                self.config.max_calls_per_principal, "calls")
        key = f"{limit}:{self.tenant}:{principal_key(principal)}"
        with self.concurrency.hold(key, cap, lambda: exhausted(
                limit, self.tenant, 1, f"the caller has {cap} {what} open, its limit")) as release:
            yield release
