"""Push notifications across versions with the official SDKs: the webhook relay.

Real processes on 127.0.0.1: the a2a-sdk 0.3.26 and 1.3.0 agents (their own push
senders), the gateway, the SDK clients (scenario `push_delivery`: park a task, register
the webhook with the push-config call, finish the task; the session's cached client runs,
see interop_support.client_results), and the session's stdlib webhook receiver
(tests/interop/peers/webhook_receiver.py). Inline configs (SendMessage /
SendStreamingMessage `configuration`) are driven with raw JSON-RPC in each version's
wire shape. Each case has its own webhook path on the one receiver.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.interop_support import Deployment, client_results, read_hooks, webhook_path
from tests.support.waiting import wait_until_sync

PUSH_CFG = {"id": "cfg1", "token": "tok-1", "scheme": "Bearer", "credentials": "sekret"}


class Receiver:
    def __init__(self, base: str, out: Path) -> None:
        self.base = base
        self.out = out

    def records(self, path: str) -> list[dict[str, Any]]:
        return read_hooks(self.out, path)

    def wait_for(self, path: str, done: Callable[[Any], bool],
                 timeout: float = 30) -> dict[str, Any]:
        """The first POST to ``path`` whose body satisfies ``done``."""
        def matching() -> dict[str, Any] | None:
            return next((r for r in self.records(path) if done(r["body"])), None)

        return wait_until_sync(matching, f"a matching notification on {path}",
                               timeout=timeout, interval=0.1)


@pytest.fixture(scope="module")
def receiver(deployment: Deployment) -> Receiver:
    assert deployment.hooks is not None
    return Receiver(deployment.webhook_base, deployment.hooks)


def hook_path(name: str) -> str:
    return f"/{name}-{os.urandom(4).hex()}"


def header(record: dict[str, Any], name: str) -> str | None:
    found = {k.lower(): v for k, v in record["headers"].items()}
    return found.get(name.lower())


def v10_completed(body: Any) -> bool:
    return body.get("task", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"


def v03_completed(body: Any) -> bool:
    return body.get("kind") == "task" and body.get("status", {}).get("state") == "completed"


def artifact_texts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if "text" in p]


def assert_logged_without_secrets(deployment: Deployment) -> None:
    """The gateway logs each relayed delivery, never the tokens or credentials."""
    log = (deployment.logs / "gateway.log").read_text(encoding="utf-8", errors="replace")
    assert "push relay delivered" in log
    for secret in ("sekret", "inline-cred", "tok-1", "inline-tok"):
        assert secret not in log


def report(case: str, record: dict[str, Any]) -> None:
    """Print one delivery as the receiver saw it (visible with `pytest -s`)."""
    shown = {k: v for k, v in record["headers"].items()
             if k.lower() not in ("host", "accept", "accept-encoding", "user-agent")}
    print(f"\n[{case}] POST {record['path']}\nheaders: {json.dumps(shown, sort_keys=True)}"
          f"\nbody: {json.dumps(record['body'], sort_keys=True)}")


# ---------------------------------------------------------------- push-config call


@pytest.mark.parametrize(("binding", "tenant"), [("JSONRPC", "a03"), ("HTTP+JSON", "a03")])
def test_v10_client_to_v03_agent_gets_stream_responses(
        deployment: Deployment, receiver: Receiver, binding: str, tenant: str) -> None:
    path = webhook_path("1.0", tenant, binding)
    got = client_results(deployment, "1.0", tenant, binding)["push_delivery"]
    assert "error" not in got, got
    assert got["second"] == "completed" and got["answer"] == "push from hook"
    # The client sees its own config, not the relay.
    assert {k: got["created"][k] for k in PUSH_CFG} == PUSH_CFG
    assert got["created"]["url"] == receiver.base + path

    record = receiver.wait_for(path, v10_completed)
    report(f"v1.0 client ({binding}) <- gateway <- v0.3 agent, push-config call", record)
    body = record["body"]
    assert set(body) == {"task"}  # a v1.0 StreamResponse, not a bare v0.3 Task
    assert "kind" not in body["task"]
    assert artifact_texts(body["task"]["artifacts"][0]["parts"]) == ["push from hook"]
    assert header(record, "Authorization") == "Bearer sekret"
    assert header(record, "X-A2A-Notification-Token") == "tok-1"
    assert header(record, "Content-Type") == "application/a2a+json"
    for other in receiver.records(path):  # every delivery on this path is v1.0-shaped
        assert set(other["body"]) <= {"task", "message", "statusUpdate", "artifactUpdate"}
    assert_logged_without_secrets(deployment)


@pytest.mark.parametrize("tenant", ["a10", "r10"])
def test_v03_client_to_v10_agent_gets_tasks(
        deployment: Deployment, receiver: Receiver, tenant: str) -> None:
    path = webhook_path("0.3", tenant, "JSONRPC")
    got = client_results(deployment, "0.3", tenant, "JSONRPC")["push_delivery"]
    assert "error" not in got, got
    assert got["second"] == "completed" and got["answer"] == "push from hook"
    assert {k: got["created"][k] for k in PUSH_CFG} == PUSH_CFG
    assert got["created"]["url"] == receiver.base + path

    record = receiver.wait_for(path, v03_completed)
    report(f"v0.3 client <- gateway <- v1.0 agent ({tenant}), push-config call", record)
    body = record["body"]
    assert body["kind"] == "task" and body["id"] and body["contextId"]
    assert artifact_texts(body["artifacts"][0]["parts"]) == ["push from hook"]
    assert header(record, "X-A2A-Notification-Token") == "tok-1"
    assert header(record, "Content-Type") == "application/json"
    for other in receiver.records(path):  # the v1.0 events all arrive as Task snapshots
        assert other["body"]["kind"] == "task"
    assert_logged_without_secrets(deployment)


# ---------------------------------------------------------------- inline configs


async def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> list[Any]:
    """A JSON-RPC call; the result, or every SSE event's result for streams."""
    async with aiohttp.ClientSession() as http, http.post(
            url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=60)) as resp:
        if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            events = []
            async for line in resp.content:
                if line.startswith(b"data:"):
                    events.append(json.loads(line[5:]))
            return events
        return [await resp.json()]


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_inline_config_v10_wire_to_v03_agent(
        deployment: Deployment, receiver: Receiver, streaming: bool) -> None:
    path = hook_path("inline-v10")
    text = "stream: 2" if streaming else "task: inline"
    replies = await _post(deployment.url("a03"), {
        "jsonrpc": "2.0", "id": 1,
        "method": "SendStreamingMessage" if streaming else "SendMessage",
        "params": {
            "message": {"messageId": os.urandom(6).hex(), "role": "ROLE_USER",
                        "parts": [{"text": text}]},
            "configuration": {"taskPushNotificationConfig": {
                "url": receiver.base + path, "token": "inline-tok",
                "authentication": {"scheme": "Bearer", "credentials": "inline-cred"}}}}},
        {"A2A-Version": "1.0"})
    assert all("error" not in r for r in replies), replies
    record = receiver.wait_for(path, v10_completed)
    report(f"v1.0 wire inline ({'stream' if streaming else 'send'}) <- v0.3 agent", record)
    texts = artifact_texts(record["body"]["task"]["artifacts"][0]["parts"])
    assert "".join(texts) == ("chunk 0chunk 1" if streaming else "built inline")
    assert header(record, "Authorization") == "Bearer inline-cred"
    assert header(record, "X-A2A-Notification-Token") == "inline-tok"
    assert header(record, "Content-Type") == "application/a2a+json"


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_inline_config_v03_wire_to_v10_agent(
        deployment: Deployment, receiver: Receiver, streaming: bool) -> None:
    path = hook_path("inline-v03")
    text = "stream: 2" if streaming else "task: inline"
    replies = await _post(deployment.url("a10"), {
        "jsonrpc": "2.0", "id": 1, "method": "message/stream" if streaming else "message/send",
        "params": {
            "message": {"kind": "message", "messageId": os.urandom(6).hex(), "role": "user",
                        "parts": [{"kind": "text", "text": text}]},
            "configuration": {"pushNotificationConfig": {
                "url": receiver.base + path, "token": "inline-tok03",
                "authentication": {"schemes": ["Bearer"], "credentials": "inline-cred03"}}}}},
        {})
    assert all("error" not in r for r in replies), replies
    record = receiver.wait_for(path, v03_completed)
    report(f"v0.3 wire inline ({'stream' if streaming else 'send'}) <- v1.0 agent", record)
    body = record["body"]
    assert body["kind"] == "task"
    parts = [p for a in body.get("artifacts", []) for p in a["parts"]]
    assert "".join(artifact_texts(parts)) == ("chunk 0chunk 1" if streaming else "built inline")
    assert header(record, "X-A2A-Notification-Token") == "inline-tok03"
    assert header(record, "Content-Type") == "application/json"
