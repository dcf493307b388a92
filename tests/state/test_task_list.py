"""ListTasks from the task index through a real gateway and the v0.3 demo agent: on a
SQLite file and on a real Redis, across a gateway restart, and for tasks the backend no
longer knows."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.config.models import parse_config
from gateway.server.app import Server
from gateway.state import TaskRecord
from gateway.state.sqlite_store import SqliteStore
from tests.support.helpers import free_port, v03

V10 = {"A2A-Version": "1.0"}


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=V10) as resp:
        return await resp.json()


def message(text: str, context_id: str) -> dict[str, Any]:
    return {"messageId": os.urandom(6).hex(), "role": "ROLE_USER", "contextId": context_id,
            "parts": [{"text": text}]}


async def started(demo_agent: str, state: dict[str, Any]) -> tuple[Server, str]:
    port = free_port()
    server = Server(parse_config({"listen": {"http": f"127.0.0.1:{port}"},
                                  "tenants": {"demo": v03(demo_agent)}, "state": state}))
    await server.start()
    return server, f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_listing_on_either_store(backend: str, demo_agent: str, tmp_path: Path,
                                       http: aiohttp.ClientSession,
                                       request: pytest.FixtureRequest) -> None:
    state: dict[str, Any] = {"path": str(tmp_path / "state.db")}
    if backend == "redis":
        state = {"backend": "redis", "url": request.getfixturevalue("redis_url"),
                 "key_prefix": f"list-{uuid.uuid4().hex[:8]}:"}
    server, url = await started(demo_agent, state)
    try:
        ctx = uuid.uuid4().hex
        sent = [(await rpc(http, url, "SendMessage", {"message": message(f"task: {i}", ctx)})
                 )["result"]["task"]["id"] for i in range(3)]
        listed = (await rpc(http, url, "ListTasks", {"contextId": ctx, "pageSize": 2}))["result"]
        rest = (await rpc(http, url, "ListTasks", {"contextId": ctx, "pageSize": 2,
                                                   "pageToken": listed["nextPageToken"]}))
        ids = [t["id"] for t in listed["tasks"]] + [t["id"] for t in rest["result"]["tasks"]]
        assert ids == list(reversed(sent)) and listed["totalSize"] == 3
        assert rest["result"]["nextPageToken"] == ""
    finally:
        await server.stop()


async def test_the_index_survives_a_restart(demo_agent: str, tmp_path: Path,
                                            http: aiohttp.ClientSession) -> None:
    state = {"path": str(tmp_path / "state.db")}
    ctx = uuid.uuid4().hex
    server, url = await started(demo_agent, state)
    try:
        task = (await rpc(http, url, "SendMessage", {"message": message("task: r", ctx)}))[
            "result"]["task"]
    finally:
        await server.stop()  # writes what was still waiting
    server, url = await started(demo_agent, state)
    try:
        listed = (await rpc(http, url, "ListTasks", {"contextId": ctx}))["result"]
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        assert listed["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        await server.stop()


async def test_a_task_the_backend_forgot_is_listed_as_recorded(
        demo_agent: str, tmp_path: Path, http: aiohttp.ClientSession) -> None:
    path = str(tmp_path / "state.db")
    store = SqliteStore(path)
    await store.record_task(TaskRecord("demo", "gone", "ctx-gone", "TASK_STATE_WORKING",
                                       1_700_000_000.0, 1_700_000_000.5))
    await store.close()
    server, url = await started(demo_agent, {"path": path})
    try:
        listed = (await rpc(http, url, "ListTasks", {"contextId": "ctx-gone"}))["result"]
        assert listed["tasks"] == [{"id": "gone", "contextId": "ctx-gone", "status": {
            "state": "TASK_STATE_WORKING", "timestamp": "2023-11-14T22:13:20.500Z"}}]
        bad = await rpc(http, url, "ListTasks", {"pageSize": 0})
        assert bad["error"]["code"] == -32602
    finally:
        await server.stop()
