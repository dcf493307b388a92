"""Token buckets (burst, refusal with retry_after, refill), per tenant and per principal,
and the per-principal caps on calls and streams open at once."""

from __future__ import annotations

import pytest

from gateway.auth.principal import Principal
from gateway.auth.ratelimit import Concurrency, LocalBuckets, StoreOutage, TrafficLimits
from gateway.config.auth import RateLimitsConfig
from gateway.observability.metrics import LIMIT_REFUSALS as REFUSED
from gateway.state import StoreError
from tests.support.helpers import ManualClock
from translators.errors import A2AError

ALICE = Principal("alice", "jwt")
BOB = Principal("bob", "jwt")


def test_bucket_burst_refusal_and_refill() -> None:
    clock = ManualClock(50.0)
    buckets = LocalBuckets(clock)
    assert [buckets.take_now("k", 2.0, 3) for _ in range(3)] == [None, None, None]
    wait = buckets.take_now("k", 2.0, 3)
    assert wait == pytest.approx(0.5)
    clock.now += 0.25
    assert buckets.take_now("k", 2.0, 3) == pytest.approx(0.25)
    clock.now += 0.25
    assert buckets.take_now("k", 2.0, 3) is None
    clock.now += 100  # refills to the burst, no further
    assert [buckets.take_now("k", 2.0, 3) for _ in range(4)][-1] is not None
    assert buckets.take_now("other", 2.0, 3) is None  # buckets are per key


def test_least_recently_used_buckets_go_first() -> None:
    buckets = LocalBuckets(ManualClock(50.0), max_keys=2)
    buckets.take_now("a", 1, 1)
    buckets.take_now("b", 1, 1)
    buckets.take_now("c", 1, 1)
    assert buckets.take_now("a", 1, 1) is None  # forgotten: starts full again
    assert buckets.take_now("c", 1, 1) is not None


def limits(clock: ManualClock, **cfg: object) -> TrafficLimits:
    return TrafficLimits("t", RateLimitsConfig.model_validate(cfg), LocalBuckets(clock),
                         Concurrency())


async def test_principal_rate_refusal_says_when_to_retry() -> None:
    clock = ManualClock(50.0)
    lim = limits(clock, principal={"rate": 0.5, "burst": 2})
    before = REFUSED.labels("rate_per_principal", "t")._value.get()
    await lim.admit(ALICE)
    await lim.admit(ALICE)
    with pytest.raises(A2AError) as caught:
        await lim.admit(ALICE)
    err = caught.value
    assert err.kind.name == "ResourceExhaustedError"
    assert err.metadata == {"limit": "rate_per_principal", "retry_after": "2"}
    assert REFUSED.labels("rate_per_principal", "t")._value.get() == before + 1
    await lim.admit(BOB)  # another principal, another bucket
    await lim.admit(None)  # anonymous callers share one
    clock.now += 2
    await lim.admit(ALICE)


async def test_tenant_rate_is_shared_and_retry_after_is_at_least_one_second() -> None:
    clock = ManualClock(50.0)
    lim = limits(clock, tenant={"rate": 100, "burst": 1})
    await lim.admit(ALICE)
    with pytest.raises(A2AError) as caught:
        await lim.admit(BOB)
    assert caught.value.metadata == {"limit": "rate_per_tenant", "retry_after": "1"}
    clock.now += 0.01
    await lim.admit(BOB)


def test_concurrent_calls_and_streams_per_principal() -> None:
    lim = limits(ManualClock(50.0), max_calls_per_principal=1, max_streams_per_principal=2)
    with lim.hold(ALICE, streaming=False):
        with pytest.raises(A2AError) as caught, lim.hold(ALICE, streaming=False):
            pass
        assert caught.value.metadata["limit"] == "max_calls_per_principal"
        with lim.hold(BOB, streaming=False), lim.hold(ALICE, streaming=True), \
                lim.hold(ALICE, streaming=True):
            with pytest.raises(A2AError) as caught, lim.hold(ALICE, streaming=True):
                pass
            assert caught.value.metadata == {"limit": "max_streams_per_principal",
                                             "retry_after": "1"}
    with lim.hold(ALICE, streaming=False):  # released when the call ended
        pass
    assert lim.concurrency.held("max_calls_per_principal:t:jwt:alice") == 0


async def test_a_rebuilt_policy_keeps_buckets_and_open_calls() -> None:
    from gateway.auth.service import GatewayAuth
    from gateway.config.auth import AuthConfig

    cfg = AuthConfig.model_validate({"rate_limits": {"principal": {"rate": 0.1, "burst": 1},
                                                     "max_calls_per_principal": 1}})
    old = GatewayAuth(cfg, {"t": None})
    await old.for_tenant("t").limits.admit(ALICE)
    with old.for_tenant("t").limits.hold(ALICE, streaming=False):
        new = GatewayAuth(cfg, {"t": None}, previous=old)
        with pytest.raises(A2AError):
            await new.for_tenant("t").limits.admit(ALICE)
        with pytest.raises(A2AError), new.for_tenant("t").limits.hold(ALICE, streaming=False):
            pass


class _DownStore:
    """A bucket store that cannot be reached (the limiter's dependency, not under test)."""

    def __init__(self) -> None:
        self.asked = 0
        self.down = True

    async def take(self, key: str, rate: float, burst: int) -> float | None:
        self.asked += 1
        if self.down:
            raise StoreError("Redis store redis://127.0.0.1:1/0: Error 111 connecting")
        return None


@pytest.mark.parametrize("policy", ["local", "allow"])
async def test_an_unreachable_store_is_asked_again_a_second_later(policy: str) -> None:
    clock = ManualClock(50.0)
    store = _DownStore()
    lim = TrafficLimits("t", RateLimitsConfig.model_validate(
        {"principal": {"rate": 0.01, "burst": 2}, "on_store_outage": policy}), store,
        Concurrency(), StoreOutage(clock))
    await lim.admit(ALICE)
    await lim.admit(ALICE)
    assert store.asked == 1  # the second call went straight to the fallback
    if policy == "local":
        with pytest.raises(A2AError) as caught:  # this process's bucket: burst 2
            await lim.admit(ALICE)
        assert caught.value.kind.name == "ResourceExhaustedError"
    clock.now += 1.0
    store.down = False
    await lim.admit(ALICE)
    assert store.asked == 2
    await lim.admit(ALICE)
    assert store.asked == 3  # answered: asked every time again


async def test_refuse_asks_the_store_every_time() -> None:
    store = _DownStore()
    lim = TrafficLimits("t", RateLimitsConfig.model_validate(
        {"tenant": {"rate": 1, "burst": 1}, "on_store_outage": "refuse"}), store,
        Concurrency(), StoreOutage(ManualClock(50.0)))
    for asked in (1, 2):
        with pytest.raises(A2AError) as caught:
            await lim.admit(ALICE)
        assert store.asked == asked
        assert caught.value.kind.name == "StoreUnavailableError"
        assert caught.value.metadata == {"retry_after": "1"}
    store.down = False
    await lim.admit(ALICE)  # the first call once it answers
