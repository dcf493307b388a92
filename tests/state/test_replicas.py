"""Two gateway replicas sharing one real Redis (and the relay keys), as behind one load
balancer: a task created through replica A is listed, read and cancelled through replica
B, only by its owner, and the backend's webhook, sent to B (where the balancer routes
it), is relayed by B and recorded for both."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import uuid
from typing import Any

import aiohttp

from tests.state.replica_support import KEYS, message, rpc
from tests.support.helpers import MakeGateway, receiving_webhooks, v03
from tests.support.waiting import wait_until


async def test_a_task_through_replica_a_is_served_by_replica_b(
        make_gateway: MakeGateway, demo_agent: str, redis_url: str,
        http: aiohttp.ClientSession) -> None:
    state = {"backend": "redis", "url": redis_url, "key_prefix": f"rep-{uuid.uuid4().hex[:8]}:"}
    relay_key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    auth = {"required": True, "api_keys": {"keys": [
        {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
        for p, k in KEYS.items()]}}

    def relay(public: str | None = None) -> dict[str, Any]:
        return {"keys": [relay_key], "webhook_allowlist": ["127.0.0.1"],
                **({"public_url": public} if public else {})}

    tenants = {"demo": v03(demo_agent)}
    b = await make_gateway(tenants, state=state, auth=auth, push_relay=relay())
    # A's relay URLs name B: the balancer sends the backend's webhooks there.
    a = await make_gateway(tenants, state=state, auth=auth, push_relay=relay(b))
    async with receiving_webhooks() as (hook_url, received):
        ctx = uuid.uuid4().hex
        task = (await rpc(http, a, "alice", "SendMessage", message("input: trip", ctx))
                )["result"]["task"]
        created = await rpc(http, a, "alice", "CreateTaskPushNotificationConfig", {
            "taskId": task["id"], "id": "c1", "url": hook_url})
        assert created["result"]["url"] == hook_url
        # B reads it for its owner at once (it asks the store again when it finds no
        # owner), lists it once A has written it (within its linger), and shows nobody
        # else either.
        got = await rpc(http, b, "alice", "GetTask", {"id": task["id"]})
        assert got["result"]["id"] == task["id"]
        async def listed_on_b() -> dict[str, Any] | None:
            listed = (await rpc(http, b, "alice", "ListTasks", {"contextId": ctx}))["result"]
            return listed if listed["tasks"] else None

        listed = await wait_until(listed_on_b, "the task listed on B")
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        assert listed["tasks"][0]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert (await rpc(http, b, "bob", "GetTask", {"id": task["id"]}))["error"][
            "code"] == -32001
        assert (await rpc(http, b, "bob", "ListTasks", {"contextId": ctx}))["result"][
            "tasks"] == []
        # The follow-up through B completes it; the agent's webhook reaches B, which
        # relays it in the client's version.
        await rpc(http, b, "alice", "SendMessage",
                  message("Paris", ctx, taskId=task["id"]))
        body = await asyncio.wait_for(received.get(), 10)
        while body["task"]["status"]["state"] != "TASK_STATE_COMPLETED":
            body = await asyncio.wait_for(received.get(), 10)
        assert body["task"]["id"] == task["id"]
        # A sees the end too (recorded by B).
        listed = (await rpc(http, a, "alice", "ListTasks", {
            "contextId": ctx, "status": "TASK_STATE_COMPLETED"}))["result"]
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        # Cancelled through B, a task started through A.
        slow = (await rpc(http, a, "alice", "SendMessage", message("input: x", ctx))
                )["result"]["task"]
        assert (await rpc(http, b, "bob", "CancelTask", {"id": slow["id"]}))["error"][
            "code"] == -32001
        canceled = await rpc(http, b, "alice", "CancelTask", {"id": slow["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        listed = (await rpc(http, a, "alice", "ListTasks", {"contextId": ctx}))["result"]
        assert {t["id"]: t["status"]["state"] for t in listed["tasks"]} == {
            task["id"]: "TASK_STATE_COMPLETED", slow["id"]: "TASK_STATE_CANCELED"}
