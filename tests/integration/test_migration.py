"""Migration mode end to end on loopback: two demo agents behind one tenant (the primary
and the candidate), the canary's sticky arms, the owners of tasks, ListTasks over both,
a candidate that refuses connections, the automatic rollback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gateway.demo.agent import start_demo_agent
from tests.support.helpers import MakeGateway, free_port


@pytest.fixture
async def two_agents() -> AsyncIterator[tuple[str, str]]:
    ports = free_port(), free_port()
    runners = [await start_demo_agent("127.0.0.1", p) for p in ports]
    yield f"http://127.0.0.1:{ports[0]}/", f"http://127.0.0.1:{ports[1]}/"
    for runner in runners:
        await runner.cleanup()


def tenant(primary: str, candidate: str, **migration: Any) -> dict[str, Any]:
    return {"backend": {"url": primary, "version": "0.3"},
            "migration": {"candidate": {"url": candidate, "version": "0.3"}, **migration}}


async def call(http: aiohttp.ClientSession, gw: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(gw + "/shop/", json=body) as resp:
        assert resp.status == 200
        return await resp.json()


def message(text: str, **extra: Any) -> dict[str, Any]:
    import uuid
    return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


async def test_canary_sends_a_share_of_new_conversations_and_follow_ups_to_their_owner(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession) -> None:
    primary, candidate = two_agents
    gw = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                            canary={"share": 0.5})})
    tasks = []
    for i in range(40):
        reply = await call(http, gw, "message/send", {"message": message(f"task: {i}")})
        assert "result" in reply, reply
        tasks.append(reply["result"])
    for task in tasks:  # a task is known only to the agent that made it
        got = await call(http, gw, "tasks/get", {"id": task["id"]})
        assert got.get("result", {}).get("id") == task["id"], got
        follow = await call(http, gw, "message/send", {"message": message(
            "again", taskId=task["id"], contextId=task["contextId"])})
        assert "error" not in follow or follow["error"]["code"] != -32001, follow
