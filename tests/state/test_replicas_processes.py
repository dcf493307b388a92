"""Two gateway processes on one real Redis, as two replicas behind one load balancer: a
task created through A is listed, read and cancelled through B, and the agent's webhook,
sent to B, is relayed by B. Each replica's log shows its own part of the flow."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp

from tests.state.replica_support import KEYS, demo_agent, gateway, message, rpc
from tests.support.helpers import receiving_webhooks
from tests.support.waiting import wait_until


def call_lines(log: Path) -> list[dict[str, Any]]:
    lines = [json.loads(raw) for raw in log.read_text().splitlines() if raw.startswith("{")]
    return [line for line in lines if line.get("event") in ("call", "push relay delivered")]


async def test_two_replica_processes_share_tasks_and_relay(tmp_path: Path,
                                                           redis_url: str) -> None:
    state = {"backend": "redis", "url": redis_url, "key_prefix": f"rp-{uuid.uuid4().hex[:8]}:"}
    relay_key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    auth = {"required": True, "api_keys": {"keys": [
        {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
        for p, k in KEYS.items()]}}
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        relay = {"keys": [relay_key], "webhook_allowlist": ["127.0.0.1"]}
        b, b_log = gateway(stack, tmp_path, "b", agent, state=state, auth=auth,
                           push_relay=relay)
        # A's relay URLs name B: the balancer sends the agent's webhooks there.
        a, a_log = gateway(stack, tmp_path, "a", agent, state=state, auth=auth,
                           push_relay={**relay, "public_url": b})
        async with receiving_webhooks() as (hook_url, received), \
                aiohttp.ClientSession() as http:
            ctx = uuid.uuid4().hex
            task = (await rpc(http, a + "/t", "alice", "SendMessage",
                              message("input: trip", ctx)))["result"]["task"]
            await rpc(http, a + "/t", "alice", "CreateTaskPushNotificationConfig", {
                "taskId": task["id"], "id": "c1", "url": hook_url})
            async def listed_on_b() -> dict[str, Any] | None:
                listed = (await rpc(http, b + "/t", "alice", "ListTasks",
                                    {"contextId": ctx}))["result"]
                return listed if listed["tasks"] else None

            listed = await wait_until(listed_on_b, "the task listed on B")
            assert [t["id"] for t in listed["tasks"]] == [task["id"]]
            got = await rpc(http, b + "/t", "alice", "GetTask", {"id": task["id"]})
            assert got["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert (await rpc(http, b + "/t", "bob", "GetTask", {"id": task["id"]}))[
                "error"]["code"] == -32001
            canceled = await rpc(http, b + "/t", "alice", "CancelTask", {"id": task["id"]})
            assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
            body = await asyncio.wait_for(received.get(), 10)
            while body["task"]["status"]["state"] != "TASK_STATE_CANCELED":
                body = await asyncio.wait_for(received.get(), 10)
            assert body["task"]["id"] == task["id"]
            # A call's line is written after its answer: wait for the last ones.
            await wait_until(lambda: any(line.get("operation") == "CancelTask"
                                         for line in call_lines(b_log)),
                             "the CancelTask line on B")
    ops = {name: [(line.get("operation") or line["event"], line.get("principal"),
                   line.get("outcome")) for line in call_lines(log)]
           for name, log in (("a", a_log), ("b", b_log))}
    assert ops["a"] == [("SendMessage", "alice", "ok"),
                        ("CreateTaskPushNotificationConfig", "alice", "ok")]
    assert ("CancelTask", "alice", "ok") in ops["b"]
    assert ("GetTask", "bob", "TASK_NOT_FOUND") in ops["b"]
    assert any(op == "push relay delivered" for op, _, _ in ops["b"])
