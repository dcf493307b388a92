"""The demo agent's push notifications (v0.3: the full Task, X-A2A-Notification-Token),
and its lifecycle on a real port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.demo.agent import start_demo_agent
from tests.integration.demo_support import JSON, result, rpc, send, send_follow_up, user_message

# --- push notifications ---------------------------------------------------------


async def test_push_config_set_get_list_delete(client: TestClient[Any, Any]) -> None:
    task = await send(client, "task: x")
    tid = task["id"]
    default = await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": tid, "pushNotificationConfig": {"url": "http://127.0.0.1:9/a", "token": "t1"}},
    )
    assert default == {
        "taskId": tid,
        "pushNotificationConfig": {"url": "http://127.0.0.1:9/a", "token": "t1", "id": tid},
    }
    named = await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": tid, "pushNotificationConfig": {"id": "b", "url": "http://127.0.0.1:9/b"}},
    )
    assert named["pushNotificationConfig"]["id"] == "b"

    got_default = await result(client, "tasks/pushNotificationConfig/get", {"id": tid})
    assert got_default["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/a"
    got_named = await result(
        client, "tasks/pushNotificationConfig/get", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert got_named["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/b"

    listed = await result(client, "tasks/pushNotificationConfig/list", {"id": tid})
    assert isinstance(listed, list)
    assert sorted(c["pushNotificationConfig"]["id"] for c in listed) == sorted([tid, "b"])
    assert all(c["taskId"] == tid for c in listed)

    deleted = await rpc(
        client, "tasks/pushNotificationConfig/delete", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert "result" in deleted
    assert deleted["result"] is None
    listed = await result(client, "tasks/pushNotificationConfig/list", {"id": tid})
    assert [c["pushNotificationConfig"]["id"] for c in listed] == [tid]
    missing = await rpc(
        client, "tasks/pushNotificationConfig/get", {"id": tid, "pushNotificationConfigId": "b"}
    )
    assert missing["error"]["code"] == -32602
    unknown = await rpc(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": "nope", "pushNotificationConfig": {"url": "http://x/"}},
    )
    assert unknown["error"]["code"] == -32001


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]]]:
    """A local webhook that records every POST it gets."""
    received: asyncio.Queue[tuple[dict[str, str], JSON]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put((dict(request.headers), await request.json()))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    async with TestServer(app) as server:
        yield str(server.make_url("/hook")), received


async def next_push(
    received: asyncio.Queue[tuple[dict[str, str], JSON]], state: str
) -> tuple[dict[str, str], JSON]:
    while True:
        headers, task = await asyncio.wait_for(received.get(), 5)
        if task["status"]["state"] == state:
            return headers, task


async def test_push_delivery_with_inline_config(
    client: TestClient[Any, Any],
    receiver: tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]],
) -> None:
    url, received = receiver
    task = await send(
        client, "task: pushed", pushNotificationConfig={"url": url, "token": "secret-token"}
    )
    headers, pushed = await next_push(received, "completed")
    assert headers["X-A2A-Notification-Token"] == "secret-token"
    assert headers["Content-Type"].startswith("application/json")
    assert pushed["kind"] == "task"
    assert pushed["id"] == task["id"]
    assert pushed["artifacts"][0]["parts"][0]["text"] == "built pushed"


async def test_push_delivery_with_set_config_follows_state_changes(
    client: TestClient[Any, Any],
    receiver: tuple[str, asyncio.Queue[tuple[dict[str, str], JSON]]],
) -> None:
    url, received = receiver
    task = await send(client, "input: honey")
    await result(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": task["id"], "pushNotificationConfig": {"url": url}},
    )
    await send_follow_up(client, task, "the hive")
    states = []
    for _ in range(2):
        headers, pushed = await asyncio.wait_for(received.get(), 5)
        assert "X-A2A-Notification-Token" not in headers
        states.append(pushed["status"]["state"])
    assert states == ["working", "completed"]
    assert pushed["artifacts"][0]["parts"][0]["text"] == "honey from the hive"


async def test_failing_push_does_not_break_the_task(client: TestClient[Any, Any]) -> None:
    task = await send(client, "task: y", pushNotificationConfig={"url": "http://127.0.0.1:1/x"})
    assert task["status"]["state"] == "completed"
    bad_scheme = await send(client, "task: z", pushNotificationConfig={"url": "ftp://nowhere"})
    assert bad_scheme["status"]["state"] == "completed"
    assert (await send(client, "still alive"))["parts"][0]["text"] == "echo: still alive"


# --- real port and lifecycle ------------------------------------------------------


async def test_start_demo_agent_serves_and_cleans_up_promptly() -> None:
    runner = await start_demo_agent("127.0.0.1", 0)
    try:
        port = runner.addresses[0][1]
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/.well-known/agent-card.json") as response:
                assert (await response.json())["url"] == f"{base}/"
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": user_message("slow")},
            }
            # A blocking `slow` send is in flight while we shut down: cleanup must
            # end it (and the 30 s worker) instead of waiting for it.
            blocked = asyncio.create_task(session.post(f"{base}/", json=body))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await runner.cleanup()
            assert time.monotonic() - started < 2
            response = await asyncio.wait_for(blocked, 5)
            reply = await response.json()
            assert reply["result"]["status"]["state"] == "working"
    finally:
        await runner.cleanup()
