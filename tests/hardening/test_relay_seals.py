"""Defect 2: the relay seal was a decryption oracle. A seal opens only for the relay
endpoint and for answers about its own tenant and task; a client may not register a relay
URL; one notification is delivered once; a seal stops working after its task ends.

Defect 18: same-version webhooks (which the backend calls directly) pass the SSRF guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.hardening.hardening_support import V10, j03_message, p10_message, post, rpc_body
from tests.support.helpers import MakeGateway, serving, v03

Hooks = list[tuple[str, Any]]


@pytest.fixture
async def hooks() -> AsyncIterator[tuple[str, Hooks]]:
    received: Hooks = []

    async def hook(request: web.Request) -> web.Response:
        received.append((request.path, await request.json()))
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/{name}", hook)
    async with serving(app) as base:
        yield f"{base}", received


async def _victim_config(http: aiohttp.ClientSession, gw: str, demo: str,
                         hook: str) -> tuple[str, str]:
    """Tenant alpha's v1.0 client registers a webhook with credentials; the (v0.3) demo
    agent behind it holds the relay URL. Returns (task id, relay URL)."""
    _, _, reply = await post(http, gw + "/alpha", rpc_body(
        "SendMessage", {"message": p10_message("input: trip")}), headers=V10)
    task_id = reply["result"]["task"]["id"]
    cfg = {"taskId": task_id, "id": "c1", "url": hook, "token": "victim-token",
           "authentication": {"scheme": "Bearer", "credentials": "victim-secret"}}
    _, _, created = await post(http, gw + "/alpha", rpc_body(
        "CreateTaskPushNotificationConfig", cfg), headers=V10)
    assert created["result"] == cfg
    _, _, held = await post(http, demo, rpc_body("tasks/pushNotificationConfig/get", {
        "id": task_id, "pushNotificationConfigId": "c1"}))
    relay_url = held["result"]["pushNotificationConfig"]["url"]
    assert "/_relay/" in relay_url
    return task_id, relay_url


async def test_a_relay_url_never_unseals_for_another_caller(
        make_gateway: MakeGateway, demo_agent: str, hooks: tuple[str, Hooks]) -> None:
    base, _ = hooks
    gw = await make_gateway({"alpha": v03(demo_agent), "beta": v03(demo_agent)})
    async with aiohttp.ClientSession() as http:
        _, relay_url = await _victim_config(http, gw, demo_agent, base + "/victim")
        # The attacker's own task, through either tenant, in v0.3 (no relay in between).
        for tenant in ("beta", "alpha"):
            _, _, mine = await post(http, f"{gw}/{tenant}", rpc_body("message/send", {
                "message": j03_message("slow"), "configuration": {"blocking": False}}))
            attack = {"taskId": mine["result"]["id"],
                      "pushNotificationConfig": {"id": "x", "url": relay_url}}
            _, _, reply = await post(http, f"{gw}/{tenant}", rpc_body(
                "tasks/pushNotificationConfig/set", attack))
            assert reply["error"]["code"] == -32602, reply
            assert "relay URL" in reply["error"]["message"]
            assert "victim" not in str(reply)
            await post(http, f"{gw}/{tenant}", rpc_body("tasks/cancel",
                                                        {"id": mine["result"]["id"]}))


async def test_answers_about_another_tenant_stay_sealed(
        make_gateway: MakeGateway, demo_agent: str, hooks: tuple[str, Hooks]) -> None:
    base, _ = hooks
    # Two tenants in front of the same agent: the agent's task ids are shared.
    gw = await make_gateway({"alpha": v03(demo_agent), "beta": v03(demo_agent)})
    async with aiohttp.ClientSession() as http:
        task_id, relay_url = await _victim_config(http, gw, demo_agent, base + "/victim")
        _, _, reply = await post(http, gw + "/beta", rpc_body(
            "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}), headers=V10)
        assert reply["result"]["url"] == relay_url  # left sealed: opaque
        assert "victim" not in str(reply)
        _, _, reply = await post(http, gw + "/alpha", rpc_body(
            "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}), headers=V10)
        # Its owner still sees its own config.
        assert reply["result"]["authentication"]["credentials"] == "victim-secret"


async def test_a_replayed_notification_is_delivered_once(
        make_gateway: MakeGateway, demo_agent: str, hooks: tuple[str, Hooks]) -> None:
    base, received = hooks
    gw = await make_gateway({"alpha": v03(demo_agent)},
                            push_relay={"webhook_allowlist": ["127.0.0.1"], "spent_after": 0.3})
    async with aiohttp.ClientSession() as http:
        task_id, relay_url = await _victim_config(http, gw, demo_agent, base + "/replay")
        _, _, held = await post(http, demo_agent, rpc_body(
            "tasks/pushNotificationConfig/get", {"id": task_id, "pushNotificationConfigId": "c1"}))
        token = held["result"]["pushNotificationConfig"]["token"]
        working = {"kind": "task", "id": task_id, "contextId": "c",
                   "status": {"state": "working"}}
        for _ in range(5):
            status, _, _ = await post(http, relay_url, working,
                                      headers={"X-A2A-Notification-Token": token})
            assert status == 202
        await asyncio.sleep(0.3)
        assert len([p for p, _ in received if p == "/replay"]) == 1
        # A notification that ends the task spends the seal (after spent_after).
        done = {**working, "status": {"state": "completed"}}
        status, _, _ = await post(http, relay_url, done,
                                  headers={"X-A2A-Notification-Token": token})
        assert status == 202
        await asyncio.sleep(0.5)
        late = {**working, "status": {"state": "completed", "timestamp": "2026-01-01T00:00:00Z"}}
        status, _, body = await post(http, relay_url, late,
                                     headers={"X-A2A-Notification-Token": token})
        assert status == 403 and "has ended" in body["error"]["message"]


async def test_same_version_webhooks_pass_the_ssrf_guard(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    # v0.3 client, v0.3 backend: the backend would call this loopback URL itself.
    gw = await make_gateway({"d": v03(demo_agent)}, push_relay={})
    async with aiohttp.ClientSession() as http:
        _, _, task = await post(http, gw + "/d", rpc_body("message/send", {
            "message": j03_message("slow"), "configuration": {"blocking": False}}))
        cfg = {"taskId": task["result"]["id"],
               "pushNotificationConfig": {"id": "c", "url": "http://127.0.0.1:9/hook"}}
        _, _, reply = await post(http, gw + "/d", rpc_body("tasks/pushNotificationConfig/set",
                                                           cfg))
        assert reply["error"]["code"] == -32602 and "loopback" in reply["error"]["message"]
        # Inline, in SendMessage, too.
        _, _, reply = await post(http, gw + "/d", rpc_body("message/send", {
            "message": j03_message("hi"),
            "configuration": {"pushNotificationConfig": {"url": "http://169.254.169.254/x"}}}))
        assert reply["error"]["code"] == -32602 and "metadata" in reply["error"]["message"]
        await post(http, gw + "/d", rpc_body("tasks/cancel", {"id": task["result"]["id"]}))
