"""Seed scenarios against the gateway with real SDK agents behind it (server side).

I1 (the same messages over every binding the gateway's card declares, with the official
SDK clients), I2 (same failure, every binding and backend dialect), I8, I11, I12, I13 over
HTTP+JSON, driven with raw HTTP as the seed describes ("driven with curl"), and I14 against
the a2a-sdk 0.3.26 REST agent (index of all seeds: test_seeds_index.py).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.support.interop_support import Deployment, client_results

V10 = {"A2A-Version": "1.0"}
BACKENDS = ["a03", "a10", "r03", "r10", "g03", "g10"]


def _send(base: str, text: str, context_id: str, *, wait: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                        "contextId": context_id, "parts": [{"text": text}]}}
    if not wait:
        body["configuration"] = {"returnImmediately": True}
    reply = httpx.post(base + "/message:send", json=body, headers=V10, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.json()["task"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("tenant", BACKENDS)
def test_i2_task_not_found_over_every_binding(deployment: Deployment, tenant: str) -> None:
    base = deployment.url(tenant)
    rpc = httpx.post(base, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                 "params": {"id": "no-such-task"}}, headers=V10, timeout=30)
    error = rpc.json()["error"]
    assert error["code"] == -32001
    assert (error["data"][0]["reason"], error["data"][0]["domain"]) == \
        ("TASK_NOT_FOUND", "a2a-protocol.org")
    rest = httpx.get(base + "/tasks/no-such-task", headers=V10, timeout=30)
    assert rest.status_code == 404
    detail = rest.json()["error"]["details"][0]
    assert (detail["reason"], detail["domain"]) == ("TASK_NOT_FOUND", "a2a-protocol.org")
    v03 = httpx.post(base, json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                                 "params": {"id": "no-such-task"}}, timeout=30)
    assert v03.json()["error"]["code"] == -32001
    v03_rest = httpx.get(base + "/v1/tasks/no-such-task", timeout=30)
    assert v03_rest.status_code == 404


@pytest.mark.parametrize("tenant", BACKENDS)
def test_i12_list_tasks_filters_and_page_size(deployment: Deployment, tenant: str) -> None:
    """v1.0 agents list their own tasks; toward v0.3 agents the gateway lists the tasks
    that went through it, with the same semantics."""
    base = deployment.url(tenant)
    context = uuid.uuid4().hex
    done = [_send(base, f"task: {i}", context) for i in range(3)]
    working = _send(base, "slow", context, wait=False)
    try:
        query = {"contextId": context, "status": "TASK_STATE_WORKING", "pageSize": "10"}
        listed = httpx.get(base + "/tasks", params=query, headers=V10, timeout=30).json()
        assert [t["id"] for t in listed["tasks"]] == [working["id"]]
        assert listed["nextPageToken"] == ""  # present even on the last page (§3.0)
        page = httpx.get(base + "/tasks", params={"contextId": context, "pageSize": "2"},
                         headers=V10, timeout=30).json()
        assert len(page["tasks"]) == 2 and page["nextPageToken"]
        assert page["totalSize"] == 4
        rest = httpx.get(base + "/tasks", headers=V10, timeout=30, params={
            "contextId": context, "pageSize": "2", "pageToken": page["nextPageToken"]}).json()
        ids = {t["id"] for t in page["tasks"]} | {t["id"] for t in rest["tasks"]}
        assert ids == {t["id"] for t in done} | {working["id"]}
        assert all("artifacts" not in t for t in page["tasks"])  # includeArtifacts unset
    finally:
        httpx.post(f"{base}/tasks/{working['id']}:cancel", json={}, headers=V10, timeout=30)


@pytest.mark.parametrize("tenant", ["r03", "r10"])
def test_i8_tenant_prefix_and_field(deployment: Deployment, tenant: str) -> None:
    body = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    by_prefix = httpx.post(deployment.url(tenant) + "/message:send", json=body, headers=V10)
    root = f"http://127.0.0.1:{deployment.gateway_http}"
    by_field = httpx.post(root + "/message:send", json={**body, "tenant": tenant}, headers=V10)
    assert by_prefix.json() == {"message": by_prefix.json()["message"]}
    for reply in (by_prefix, by_field):
        assert reply.json()["message"]["parts"] == [{"text": "echo: hi"}]


@pytest.mark.parametrize("tenant", ["a03", "r10"])
def test_i11_stream_framing_per_binding(deployment: Deployment, tenant: str) -> None:
    base = deployment.url(tenant)
    msg = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "stream: 2"}]}}
    with httpx.stream("POST", base + "/message:stream", json=msg, headers=V10) as resp:
        rest_lines = [json.loads(line[5:]) for line in resp.iter_lines()
                      if line.startswith("data:")]
    rpc = {"jsonrpc": "2.0", "id": 5, "method": "SendStreamingMessage", "params": msg}
    with httpx.stream("POST", base, json=rpc, headers=V10) as resp:
        rpc_lines = [json.loads(line[5:]) for line in resp.iter_lines()
                     if line.startswith("data:")]
    assert all("jsonrpc" not in line for line in rest_lines)
    assert all(line["jsonrpc"] == "2.0" and line["id"] == 5 for line in rpc_lines)
    assert "task" in rest_lines[0] and "task" in rpc_lines[0]["result"]
    assert rest_lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("tenant", ["r03", "r10", "a10"])
def test_i13_unknown_fields_ignored_and_not_forwarded(deployment: Deployment,
                                                      tenant: str) -> None:
    # The v1.0 SDK agents parse strictly: an unknown field reaching them would be -32602.
    body = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                        "kind": "message", "x-extra": 1}, "unknownTopLevel": True}
    reply = httpx.post(deployment.url(tenant) + "/message:send", json=body, headers=V10)
    assert reply.status_code == 200
    assert reply.json()["message"]["parts"] == [{"text": "echo: hi"}]


# ---------------------------------------------------------------- I1


# What legitimately differs per call: ids, and what depends on when a subscription or a
# non-blocking send catches the task (which events it sees, the state it was in then).
_PER_CALL = frozenset({"id", "contextId", "taskId", "events", "finalFlags", "afterSend"})


def _same_everywhere(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _same_everywhere(v) for k, v in value.items() if k not in _PER_CALL}
    if isinstance(value, list):
        return [_same_everywhere(v) for v in value]
    return value


def _declared(deployment: Deployment, tenant: str, version: str) -> dict[str, str]:
    """binding → URL of the interfaces of ``version`` on the tenant's card (as served)."""
    card = httpx.get(deployment.url(tenant) + "/.well-known/agent-card.json",
                     headers={"A2A-Version": version}, timeout=30).json()
    if version == "1.0":
        return {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]
                if i["protocolVersion"] == version}
    return {i["transport"]: i["url"] for i in card["additionalInterfaces"]}


@pytest.mark.parametrize("tenant", BACKENDS)
@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_i1_same_message_over_every_declared_binding(deployment: Deployment, version: str,
                                                     tenant: str) -> None:
    """Seed I1: the official SDK client of ``version`` sends the same messages over each
    binding the gateway's card declares for it; the results are the same but for ids.
    (The clients' own runs, shared with the matrix; the task-not-found error is I2's.)"""
    declared = _declared(deployment, tenant, version)
    assert set(declared) == {"JSONRPC", "HTTP+JSON", "GRPC"}
    # The clients were pointed at exactly what the card declares.
    port = deployment.gateway_grpc
    assert declared["GRPC"].endswith(f":{port}") and declared["JSONRPC"].rstrip("/") == \
        declared["HTTP+JSON"] == deployment.url(tenant)
    runs = {b: client_results(deployment, version, tenant, b) for b in declared}
    scenarios = ("send_message", "send_task", "stream", "get_task", "cancel", "multi_turn",
                 "extended_card", "subscribe", "list_tasks")
    for scenario in scenarios:
        seen = {b: _same_everywhere(run[scenario]) for b, run in runs.items()}
        assert seen["HTTP+JSON"] == seen["JSONRPC"] == seen["GRPC"], (scenario, seen)
    assert runs["JSONRPC"]["send_message"]["text"] == "echo: hello"


# ---------------------------------------------------------------- I14


def test_i14_subscribe_to_a_get_only_sdk_backend(deployment: Deployment) -> None:
    """Seed I14 with a real peer: a2a-sdk 0.3.26's REST app serves subscribe on GET only
    and answers POST with 405. Tenant r03 keeps the default `subscribe_verb: POST`, so a
    subscription through the gateway works only because the egress retried with GET.
    (Against stubs that accept one verb, with the order of verbs recorded:
    tests/integration/test_seed_i14.py.)"""
    agent = f"http://127.0.0.1:{deployment.agents['0.3'].rest}"
    task = httpx.post(agent + "/v1/message:send", timeout=30, json={
        "request": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                    "content": [{"text": "task: i14"}]}}).json()["task"]
    refused = httpx.post(f"{agent}/v1/tasks/{task['id']}:subscribe", json={}, timeout=30)
    assert refused.status_code == 405 and refused.headers["allow"] == "GET"
    for version in ("0.3", "1.0"):
        got = client_results(deployment, version, "r03", "JSONRPC")["subscribe"]
        assert (got["firstType"], got["finalState"]) == ("task", "completed"), got
