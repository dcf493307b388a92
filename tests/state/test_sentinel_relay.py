"""The push relay's queue on Redis behind Sentinel, through a gateway process (issue 31
items 1 and 5; docs/state.md "Redis Sentinel and failover"): an agent's notifications
are acknowledged (202) only once a replica has them, so the primary SIGKILLed while they
are posted loses none — a real receiver gets every one, in order (one delivered while the
store failed over may come twice, with its `webhook-id`);
and a queueing fewer replicas confirmed is a 503 with Retry-After, whose retry is taken."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.relay_support import (
    Gateway,
    Receiver,
    assert_once_each_in_order,
    gateway,
    sealed_for,
)
from tests.support.sentinel_process import SERVICE, SentinelSetup, sentinel_setup
from tests.support.waiting import wait_until

POSTED = 60  # notifications acknowledged in all
KILL_AFTER = 20  # acknowledged before the primary is killed


@pytest.fixture
def sentinels() -> Iterator[SentinelSetup]:
    with sentinel_setup() as setup:
        yield setup


def sentinel_state(setup: SentinelSetup, **sentinel: Any) -> dict[str, Any]:
    return {"backend": "redis", "timeout": 1.0, "key_prefix": f"sr-{uuid.uuid4().hex[:8]}:",
            "sentinel": {"hosts": setup.hosts, "service": SERVICE, "ack_timeout": 0.5,
                         "failover_wait": 20, **sentinel}}


async def post(http: aiohttp.ClientSession, gw: Gateway, sealed: str, n: int) -> int:
    """What a v0.3 agent posts (the task, numbered); the answer's status (a 503 says why
    and when to retry)."""
    body = {"kind": "task", "id": "t1", "contextId": "ctx", "status": {"state": "working"},
            "metadata": {"n": n}}
    async with http.post(f"{gw.url}/_relay/{sealed}", json=body,
                         headers={"X-A2A-Notification-Token": "relay-tok"}) as resp:
        if resp.status == 503:
            assert resp.headers["Retry-After"], await resp.text()
            assert "cannot queue the notification" in await resp.text()
        return resp.status


async def test_a_failover_loses_no_acknowledged_notification(
        tmp_path: Path, sentinels: SentinelSetup) -> None:
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/fo", "t1")
    refused = 0
    with gateway(tmp_path, "gw", sentinel_state(sentinels)) as (gw, _):
        async with hooks.up(), aiohttp.ClientSession() as http, asyncio.timeout(120):
            for n in range(POSTED):
                if n == KILL_AFTER:
                    old = sentinels.kill_primary()
                # As an agent does (it SHOULD retry): again until taken.
                while (status := await post(http, gw, sealed, n)) != 202:
                    assert status == 503
                    refused += 1
                    await asyncio.sleep(0.2)
            new = await asyncio.to_thread(sentinels.wait_for_promotion)
            await wait_until(lambda: len(first_of_each(hooks)) >= POSTED,
                             f"{POSTED} deliveries", timeout=60)
    assert new != old
    # The posts after the kill went through the failover: they waited for the new primary.
    (back,) = gw.lines("state store available again")
    assert gw.lines("state store error") and back["failed_for"] > 0
    assert sentinels.sentinel_log().count("+switch-master") == 1, sentinels.sentinel_log()
    got = hooks.on("/fo")
    print(f"\nfailover {old} -> {new}: {POSTED} acknowledged, {refused} refused (503) "
          f"and posted again; {len(got)} deliveries; {back}")
    assert_once_each_in_order(first_of_each(hooks), POSTED)
    assert len(got) - POSTED <= 2, got  # a repeat: delivered, its done lost in the failover
    assert refused <= 5  # a call that outlived failover_wait, if any


def first_of_each(hooks: Receiver) -> list[tuple[str, Any]]:
    """What /fo got, each webhook id's first delivery only (as a receiver dedupes)."""
    seen: set[str] = set()
    return [(wid, body) for wid, body in hooks.on("/fo")
            if not (wid in seen or seen.add(wid))]


async def test_a_queueing_fewer_replicas_confirmed_is_a_503(
        tmp_path: Path, sentinels: SentinelSetup) -> None:
    """replica_acks above the replicas there are: the agent is told to retry; through a
    gateway that asks for the replicas there are, its retry is taken once (the refused
    call queued it all the same) and delivered once."""
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/acks", "t1")
    state = sentinel_state(sentinels, replica_acks=3)
    with gateway(tmp_path, "three", state) as (three, _):
        async with aiohttp.ClientSession() as http:
            assert await post(http, three, sealed, 0) == 503
    state["sentinel"]["replica_acks"] = 2
    async with hooks.up():
        with gateway(tmp_path, "two", state) as (two, _):
            async with aiohttp.ClientSession() as http:
                assert await post(http, two, sealed, 0) == 202
            await wait_until(lambda: hooks.on("/acks"), "the delivery", timeout=30)
            await asyncio.sleep(0.5)
    assert_once_each_in_order(hooks.on("/acks"), 1)
