"""Seed scenarios against the gateway with real SDK agents behind it (server side).

I2 (same failure, every binding and backend dialect), I8, I11, I12, I13 over HTTP+JSON.
Driven with raw HTTP, as the seed describes ("driven with curl").
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from interop_support import Deployment

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


@pytest.mark.parametrize("tenant", ["a10", "r10", "g10"])
def test_i12_list_tasks_filters_and_page_size(deployment: Deployment, tenant: str) -> None:
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


def test_i12_list_tasks_against_a_v03_backend(deployment: Deployment) -> None:
    reply = httpx.get(deployment.url("r03") + "/tasks", headers=V10, timeout=30)
    assert reply.status_code == 400
    assert reply.json()["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"


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
