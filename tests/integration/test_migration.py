"""Migration mode end to end on loopback: two demo agents behind one tenant (the primary
and the candidate), the canary's sticky arms, the owners of tasks, ListTasks over both,
a candidate that refuses connections, the automatic rollback."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.config.backend import BackendConfig
from gateway.demo.agent import start_demo_agent
from gateway.migration.agents import fingerprint
from tests.support.helpers import MakeGateway, free_port
from tests.support.waiting import wait_until


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
    arms = (await _report(http, gw))["arms"]
    assert 5 <= arms["candidate"]["calls"] <= 35, arms  # both agents made tasks
    # ListTasks (a v1.0 client) shows both agents' tasks, from the task index.
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 100}}
    async with http.post(gw + "/shop/", json=body, headers={"A2A-Version": "1.0"}) as resp:
        listed = (await resp.json())["result"]
    assert {t["id"] for t in listed["tasks"]} == {t["id"] for t in tasks}, listed
    for task in tasks:  # a task is known only to the agent that made it
        got = await call(http, gw, "tasks/get", {"id": task["id"]})
        assert got.get("result", {}).get("id") == task["id"], got
        follow = await call(http, gw, "message/send", {"message": message(
            "again", taskId=task["id"], contextId=task["contextId"])})
        assert "error" not in follow or follow["error"]["code"] != -32001, follow


async def _report(http: aiohttp.ClientSession, gw: str) -> dict[str, Any]:
    async with http.get(gw + "/_admin/migration/shop") as resp:
        assert resp.status == 200, await resp.text()
        report: dict[str, Any] = await resp.json()
        return report


async def test_a_candidate_that_stops_is_rolled_back_and_new_conversations_fall_back(
        make_gateway: MakeGateway, http: aiohttp.ClientSession) -> None:
    ports = free_port(), free_port()
    primary = await start_demo_agent("127.0.0.1", ports[0])
    candidate = await start_demo_agent("127.0.0.1", ports[1])
    try:
        gw = await make_gateway({"shop": tenant(
            f"http://127.0.0.1:{ports[0]}/", f"http://127.0.0.1:{ports[1]}/",
            mode="canary", canary={"share": 0.5},
            rollback={"window": 600, "min_calls": 5, "max_error_rate": 0.3})})
        owned: list[dict[str, Any]] = []  # conversations the candidate serves
        while len(owned) < 3:
            reply = await call(http, gw, "message/send", {"message": message("task: x")})
            report = await _report(http, gw)
            if report["arms"]["candidate"]["calls"] > len(owned):
                owned.append(reply["result"])
        await candidate.cleanup()  # the candidate goes away mid-run
        for _ in range(20):  # new conversations: none fails, the primary takes them
            reply = await call(http, gw, "message/send", {"message": message("task: y")})
            assert reply["result"]["status"]["state"] == "completed", reply
        for task in owned:  # already the candidate's: a proper error, not the primary's
            got = await call(http, gw, "tasks/get", {"id": task["id"]})
            assert got["error"]["code"] == -32603, got
            assert got["error"]["data"]["reason"] == "BACKEND_UNAVAILABLE", got
        report = await _report(http, gw)
        assert report["share"] == 0.0
        assert report["events"][0]["kind"] == "rollback"
        assert report["events"][0]["by"] == "automatic"
        assert "candidate error rate" in report["events"][0]["reason"]
        candidate_arm = report["arms"]["candidate"]
        assert candidate_arm["fell_back"] >= 1
        # Each refused new conversation, and each GetTask on its tasks (counted by the
        # stage's failed hook), counts against the candidate.
        assert candidate_arm["errors"] == candidate_arm["fell_back"] + len(owned), report
    finally:
        await primary.cleanup()


@pytest.mark.parametrize("fall_back", [True, False])
async def test_a_candidate_whose_card_cannot_be_read_fails_as_a_candidate_does(
        demo_agent: str, make_gateway: MakeGateway, http: aiohttp.ClientSession,
        fall_back: bool) -> None:
    # Discovered from its card: no card, so no connection was even tried for the call.
    card = f"http://127.0.0.1:{free_port()}/.well-known/agent-card.json"
    gw = await make_gateway({"shop": {
        "backend": {"url": demo_agent, "version": "0.3"},
        "migration": {"candidate": {"card": card}, "mode": "canary",
                      "canary": {"share": 1.0, "fall_back": fall_back},
                      "rollback": {"window": 600, "min_calls": 5, "max_error_rate": 0.3}}}})
    replies = [await call(http, gw, "message/send", {"message": message(f"task: {i}")})
               for i in range(5)]  # the fifth: min_calls, so the rollback

    async def rolled_back() -> dict[str, Any] | None:
        report = await _report(http, gw)
        return report if report["events"] else None

    report = await wait_until(rolled_back, "the automatic rollback")
    candidate = report["arms"]["candidate"]
    if fall_back:  # the primary takes each new conversation
        assert all(r["result"]["status"]["state"] == "completed" for r in replies), replies
        assert candidate["fell_back"] == 5
    else:  # a proper error, in the caller's dialect
        assert all(r["error"]["data"]["reason"] == "BACKEND_UNAVAILABLE" for r in replies)
        assert candidate["fell_back"] == 0
    assert (candidate["calls"], candidate["errors"]) == (5, 5), report
    assert report["share"] == 0.0 and report["events"][0]["by"] == "automatic", report


async def test_shadow_copies_of_an_identical_agent_agree(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession) -> None:
    primary, candidate = two_agents
    gw = await make_gateway({"shop": tenant(primary, candidate, mode="shadow", shadow={
        "operations": ["SendMessage", "SendStreamingMessage", "GetTask"], "aa": True})})
    tasks = []
    for i in range(5):
        reply = await call(http, gw, "message/send", {"message": message(f"task: {i}")})
        tasks.append(reply["result"]["id"])
    body = {"jsonrpc": "2.0", "id": 2, "method": "message/stream",
            "params": {"message": message("task: streamed")}}
    async with http.post(gw + "/shop/", json=body) as resp:
        assert b"completed" in await resp.read()

    def compared(at_least: int) -> Any:
        async def enough() -> dict[str, Any]:
            report = await _report(http, gw)
            return report if report["shadow"]["compared"] >= at_least else {}
        return enough

    await wait_until(compared(6), "the messages' copies compared")
    for task_id in tasks:  # the candidate is asked for its own twin of each task
        got = await call(http, gw, "tasks/get", {"id": task_id})
        assert got["result"]["id"] == task_id  # the primary answers
    report = await wait_until(compared(11), "the GetTask copies compared")
    shadow = report["shadow"]
    assert (shadow["agreed"], shadow["skipped"], shadow["failed"]) == (11, 0, 0), report
    assert report["disagreements"] == []
    assert report["arms"]["primary"]["calls"] == 11


async def _first_event(http: aiohttp.ClientSession, url: str, body: dict[str, Any],
                       headers: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """The first SSE event of a stream (its id and its result); the client then leaves."""
    async with http.post(url, json=body, headers=headers) as resp:
        raw = b""
        while b"\n\n" not in raw:
            raw += await resp.content.readany()
    fields = dict(line.split(": ", 1) for line in raw.decode().split("\n\n")[0].splitlines()
                  if ": " in line)
    return fields["id"], json.loads(fields["data"])


async def test_a_resumed_stream_goes_on_at_the_agent_that_owns_its_task(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession) -> None:
    primary, candidate = two_agents
    gw = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                            canary={"share": 1.0})},
                            state={"path": ":memory:", "journal": {"enabled": True}})
    body = {"jsonrpc": "2.0", "id": 3, "method": "message/stream",
            "params": {"message": message("slow")}}
    event_id, first = await _first_event(http, gw + "/shop/", body)
    task_id = first["result"]["id"]
    async with http.post(gw + "/_admin/migration/shop/rollback") as resp:
        assert (await resp.json())["share"] == 0.0  # new conversations: the primary's now
    # The same call again, resumed: it carries no task id, yet it goes on at the candidate
    # (the primary knows no such task: its subscription would end in an error).
    async with http.post(gw + "/shop/", json=body,
                         headers={"Last-Event-ID": event_id}) as resp:
        raw = b""
        while b"\n\n" not in raw:
            raw += await resp.content.readany()
        cancelled = await call(http, gw, "tasks/cancel", {"id": task_id})  # by its owner
        assert cancelled["result"]["status"]["state"] == "canceled", cancelled
        raw += await resp.content.read()
    results = [json.loads(line[len("data: "):]) for line in raw.decode().splitlines()
               if line.startswith("data: ")]
    assert all("error" not in r for r in results), results
    assert results[-1]["result"]["status"]["state"] == "canceled", results[-1]


async def test_a_conversation_under_way_before_the_migration_stays_with_the_primary(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # The gateway served the tenant before its migration; the conversation it started
    # then goes on with a message that names only its context, through the gateway now in
    # canary at share 1 on the same state: at the primary, which has its history.
    primary, candidate = two_agents
    state = {"path": str(tmp_path / "state.db"), "tasks": {"wait_for_writes": "always"}}
    before = await make_gateway({"shop": {"backend": {"url": primary, "version": "0.3"}}},
                                state=state)
    first = (await call(http, before, "message/send", {"message": message("task: 1")}))
    context_id = first["result"]["contextId"]
    gw = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                            canary={"share": 1.0})}, state=state)
    later = await call(http, gw, "message/send",
                       {"message": message("task: 2", contextId=context_id)})
    assert later["result"]["contextId"] == context_id, later
    arms = (await _report(http, gw))["arms"]
    assert (arms["primary"]["calls"], arms["candidate"]["calls"]) == (1, 0), arms
    fresh = await call(http, gw, "message/send", {"message": message("task: 3")})
    assert "result" in fresh, fresh
    arms = (await _report(http, gw))["arms"]
    assert (arms["primary"]["calls"], arms["candidate"]["calls"]) == (1, 1), arms


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


async def test_the_candidates_conversations_are_followed_by_the_index_not_bound(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # A new conversation the candidate answers with a task writes no binding: the index's
    # row of that task records the candidate, and every gateway on the state follows it,
    # whatever its share (here 0: a rollback), by task and by conversation.
    primary, candidate = two_agents
    db = tmp_path / "state.db"
    state = {"path": str(db), "tasks": {"wait_for_writes": "always"}}
    here = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                              canary={"share": 1.0})}, state=state)
    tasks = await _started(http, here, 3)
    assert _rows(db, "SELECT key FROM once WHERE key LIKE 'migration:shop:%'") == []
    recorded = "candidate@" + fingerprint(BackendConfig(url=candidate, version="0.3"))
    assert sorted(_rows(db, "SELECT task_id, agent FROM tasks WHERE tenant = 'shop'")) == \
        sorted((t["id"], recorded) for t in tasks)
    there = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                               canary={"share": 0.0})}, state=state)
    got = await call(http, there, "tasks/get", {"id": tasks[0]["id"]})
    assert got.get("result", {}).get("id") == tasks[0]["id"], got  # the primary has none
    later = await call(http, there, "message/send", {"message": message(
        "task: 4", contextId=tasks[1]["contextId"])})
    assert later["result"]["contextId"] == tasks[1]["contextId"], later
    arms = (await _report(http, there))["arms"]
    assert (arms["primary"]["calls"], arms["candidate"]["calls"]) == (0, 2), arms


async def _started(http: aiohttp.ClientSession, gw: str, count: int) -> list[Any]:
    """``count`` new conversations through ``gw``: their answers (each a task)."""
    return [(await call(http, gw, "message/send", {"message": message(f"task: {i}")})
             )["result"] for i in range(count)]


@pytest.mark.parametrize("agent", ["primary", "candidate"])
async def test_a_task_and_conversation_the_index_prunes_stay_with_their_agent(
        agent: str, two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # New conversations write no binding of their own: the index's row of their task
    # keeps them with their agent. The index keeps one task here, so the first
    # conversations' rows are pruned; pruning binds them (and a candidate's task) to that
    # agent, so another gateway on the same state, with the other share, still sends
    # their next calls there.
    primary, candidate = two_agents
    state = {"path": str(tmp_path / "state.db"), "tasks": {"wait_for_writes": "always"},
             "retention": {"max_tasks": 1, "interval": 0.05}}
    share = 1.0 if agent == "candidate" else 0.0
    before = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                                canary={"share": share})}, state=state)
    tasks = await _started(http, before, 3)

    async def pruned() -> bool:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
        async with http.post(before + "/shop/", json=body,
                             headers={"A2A-Version": "1.0"}) as resp:
            return len((await resp.json())["result"]["tasks"]) == 1

    await wait_until(pruned, "the index pruned to one task")
    gw = await make_gateway({"shop": tenant(primary, candidate, mode="canary",
                                            canary={"share": 1.0 - share})}, state=state)
    got = await call(http, gw, "tasks/get", {"id": tasks[0]["id"]})
    assert got.get("result", {}).get("id") == tasks[0]["id"], got  # only its agent has it
    later = await call(http, gw, "message/send",
                       {"message": message("task: 4", contextId=tasks[0]["contextId"])})
    assert later["result"]["contextId"] == tasks[0]["contextId"], later
    arms = (await _report(http, gw))["arms"]
    assert arms[agent]["calls"] == 2 and sum(a["calls"] for a in arms.values()) == 2, arms


async def test_a_primary_whose_card_cannot_be_read_fails_only_the_calls_that_go_to_it(
        two_agents: tuple[str, str], make_gateway: MakeGateway,
        http: aiohttp.ClientSession) -> None:
    # The legacy agent, configured by its card, is gone: the router resolved the primary
    # first for every call, so the candidate's calls failed with the primary's error.
    _, candidate = two_agents
    gone = f"http://127.0.0.1:{free_port()}/.well-known/agent-card.json"
    gw = await make_gateway({"shop": {
        "backend": {"card": gone},
        "migration": {"candidate": {"url": candidate, "version": "0.3"}, "mode": "cutover"}}})
    sent = await call(http, gw, "message/send", {"message": message("task: after")})
    task = sent["result"]
    assert task["status"]["state"] == "completed", sent
    got = await call(http, gw, "tasks/get", {"id": task["id"]})
    assert got["result"]["id"] == task["id"], got
    # A call that goes to the primary still fails as before, in the client's dialect.
    other = await call(http, gw, "tasks/get", {"id": "a-task-of-the-legacy-agent"})
    assert other["error"]["code"] == -32603, other


async def test_without_the_task_index_list_tasks_goes_to_the_primary(
        make_gateway: MakeGateway, http: aiohttp.ClientSession) -> None:
    # `state.tasks.record: false`: ListTasks of a tenant in migration was sent to the
    # index, which is off (an error), even with two v1.0 agents that list their tasks.
    ports = free_port(), free_port()
    runners = [await start_demo_agent("127.0.0.1", p, protocol="1.0") for p in ports]
    try:
        primary, candidate = (f"http://127.0.0.1:{p}/" for p in ports)
        gw = await make_gateway({"shop": {
            "backend": {"url": primary, "version": "1.0"},
            "migration": {"candidate": {"url": candidate, "version": "1.0"},
                          "mode": "canary", "canary": {"share": 0.0}}}},
            state={"path": ":memory:", "tasks": {"record": False}})
        v10 = {"A2A-Version": "1.0"}
        send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "task: listed"}]}}}
        async with http.post(gw + "/shop/", json=send, headers=v10) as resp:
            made = (await resp.json())["result"]["task"]
        body = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {"pageSize": 10}}
        async with http.post(gw + "/shop/", json=body, headers=v10) as resp:
            listed = await resp.json()
        assert [t["id"] for t in listed["result"]["tasks"]] == [made["id"]], listed
    finally:
        for runner in runners:
            await runner.cleanup()
