"""The push relay's durable queue (docs/push-relay.md, "Delivery guarantees"), with real
gateway processes on a SQLite store and a real webhook receiver (aiohttp) on 127.0.0.1.
The test posts the notifications itself, as an agent would (the SDK agents' own pushes
run through the same endpoint in tests/interop/test_push_relay_interop.py): that way it
knows their order and decides when the receiver is up.

- the receiver is down for 10 s, then up: every notification arrives, in order, ids unique;
- the gateway is SIGKILLed with 50 deliveries queued, and started again: all arrive;
- a 4xx is not retried; a 5xx is, until the attempts run out: a dead letter, which
  `a2a-gateway relay list|show|replay|drop` handle; a 429's Retry-After is honoured.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from tests.support.relay_support import (
    FAST,
    Receiver,
    assert_once_each_in_order,
    gateway,
    notify,
    sealed_for,
)
from tests.support.waiting import wait_until

OUTAGE = 10.0  # seconds the receiver is away (issue 31's scenario)


async def test_receiver_down_then_up_gets_every_notification_in_order(
        tmp_path: Path) -> None:
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/down", "t1")
    # The outage: the receiver is away for 10 s, which this schedule (backoff
    # doubling from 0.05 s, capped at 1 s; the breaker open 1 s at a time) spans with
    # attempts short of 30.
    queue = {"max_backoff": 1, "lease": 2, "poll": 0.1, "breaker": {"cool_down": 1}}
    with gateway(tmp_path, retries=30, queue=queue) as (gw, _):
        async with aiohttp.ClientSession() as http:
            for n in range(20):
                await notify(http, gw, sealed, "t1", n)
            # The first delivery fails (nothing listens) and is rescheduled.
            await wait_until(lambda: gw.lines("push relay delivery will be retried"),
                             "a retry scheduled")
            await asyncio.sleep(OUTAGE)  # the scenario's length, not a wait for a state
            assert len(gw.lines("push relay delivery will be retried")) >= 5
            assert gw.lines("push relay circuit opened")  # and no attempt spent meanwhile
            assert not gw.lines("push relay delivery failed")
            async with hooks.up():
                await wait_until(lambda: len(hooks.on("/down")) >= 20, "20 deliveries")
    assert_once_each_in_order(hooks.on("/down"), 20)
    retried = gw.lines("push relay delivery will be retried")[0]
    assert retried["attempts"] == 1 and retried["task_id"] == "t1"
    assert "ClientConnectorError" in retried["error"]


async def test_deliveries_queued_survive_a_sigkill(tmp_path: Path) -> None:
    hooks = Receiver()
    sealed = sealed_for(f"{hooks.base}/kill", "t2")
    # Same name: the same config and state file, as a restarted gateway has.
    with gateway(tmp_path, retries=30) as (gw, proc):
        async with aiohttp.ClientSession() as http:
            for n in range(50):  # each answered 202: stored
                await notify(http, gw, sealed, "t2", n)
        proc.kill()
        proc.wait()
    assert not hooks.got
    with gateway(tmp_path, retries=30) as (again, _):
        async with hooks.up():
            await wait_until(lambda: len(hooks.on("/kill")) >= 50, "50 deliveries",
                             timeout=30)
    assert_once_each_in_order(hooks.on("/kill"), 50)
    assert again.lines("push relay delivered")


async def test_4xx_is_not_retried_5xx_is_then_dead_letter_and_replay(tmp_path: Path) -> None:
    hooks = Receiver()
    hooks.answers = {"/gone": [400], "/flaky": [503, 503, 503], "/busy": [429]}
    # Room for the receiver's Retry-After (the schedule caps it at max_backoff).
    queue = {**FAST["queue"], "max_backoff": 5}  # type: ignore[dict-item]
    with gateway(tmp_path, retries=2, queue=queue) as (gw, _):
        async with hooks.up(), aiohttp.ClientSession() as http:
            for path in ("gone", "flaky", "busy"):
                await notify(http, gw, sealed_for(f"{hooks.base}/{path}", path), path, 0)
            await wait_until(lambda: len(gw.lines("push relay delivery failed")) >= 2,
                             "two dead letters")
            await wait_until(lambda: hooks.on("/busy")[1:], "the 429 tried again")
            failed = {line["task_id"]: line for line in gw.lines("push relay delivery failed")}
            assert failed["gone"]["attempts"] == 1 and failed["gone"]["status"] == 400
            assert failed["flaky"]["attempts"] == 3 and failed["flaky"]["status"] == 503
            assert len(hooks.on("/gone")) == 1 and len(hooks.on("/flaky")) == 3
            assert len({wid for wid, _ in hooks.on("/flaky")}) == 1  # one id, every attempt
            # Retry-After: 1 is the delay asked for, without jitter.
            busy = next(line for line in gw.lines("push relay delivery will be retried")
                        if line["task_id"] == "busy")
            assert busy["retry_in"] == 1.0 and busy["error"] == "HTTP 429"

            listed = gw.cli("list")
            assert listed.returncode == 0, listed.stderr
            flaky_id = hooks.on("/flaky")[0][0]
            gone_id = hooks.on("/gone")[0][0]
            assert flaky_id in listed.stdout and gone_id in listed.stdout
            assert "status 503" in listed.stdout and "attempts 3" in listed.stdout
            shown = json.loads(gw.cli("show", flaky_id).stdout)
            assert shown["body"]["task"]["metadata"] == {"n": 0}
            assert shown["attempts"] == 3 and shown["last_status"] == 503
            assert shown["webhook"] == f"127.0.0.1:{hooks.port}"

            replayed = gw.cli("replay", flaky_id)  # the receiver answers 200 now
            assert replayed.returncode == 0 and "queued again" in replayed.stdout
            await wait_until(lambda: len(hooks.on("/flaky")) == 4, "the replayed delivery")
            assert hooks.on("/flaky")[3][0] == flaky_id  # the same webhook-id
            assert gw.cli("drop", gone_id).returncode == 0
            assert gw.cli("list").stdout == ""
            missing = gw.cli("replay", gone_id)
            assert missing.returncode == 1 and "no dead letter" in missing.stderr
