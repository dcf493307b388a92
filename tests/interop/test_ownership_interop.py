"""Task ownership with the official a2a-sdk 1.3.0 client: two principals (API keys, sent
by the SDK's AuthInterceptor from the gateway's card) create tasks in one context of a
v0.3 agent; each one's ListTasks shows its own tasks only. Every client binding, every
backend binding (one pairing each), and a tenant with ownership off as the control; on
that shared tenant, a push config's credentials go back to the principal who set it only
(docs/push-relay.md, "Credentials in answers")."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.helpers import free_port, gateway_cmd, running, write_config
from tests.support.interop_support import Deployment, run_client

KEYS = {"alice": "k-alice-0123456789", "bob": "k-bob-0123456789"}
# (client binding, tenant): each binding once on each side.
PAIRS = [("JSONRPC", "own-r03"), ("HTTP+JSON", "own-g03"), ("GRPC", "own-a03")]


@dataclass
class Owned:
    http: str
    grpc: str


@pytest.fixture(scope="module")
def owned(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Owned]:
    """A gateway with API keys in front of the session's v0.3 agent, on each binding."""
    logs = tmp_path_factory.mktemp("ownership")
    agent = deployment.agents["0.3"]
    port, grpc_port = free_port(), free_port()
    jsonrpc = {"url": f"http://127.0.0.1:{agent.jsonrpc}/", "version": "0.3"}
    config = write_config(logs / "gateway.yaml", {
        "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
        "auth": {"required": True, "api_keys": {"keys": [
            {"principal": p, "sha256": hashlib.sha256(k.encode()).hexdigest()}
            for p, k in KEYS.items()]}},
        "tenants": {
            "own-a03": {"backend": jsonrpc},
            "own-r03": {"backend": {"url": f"http://127.0.0.1:{agent.rest}", "version": "0.3",
                                    "binding": "HTTP+JSON"}},
            "own-g03": {"backend": {"url": f"127.0.0.1:{agent.grpc}", "version": "0.3",
                                    "binding": "GRPC"}},
            "shared": {"backend": jsonrpc, "task_ownership": False},
        },
    })
    with running(gateway_cmd(config), port, log=logs / "gateway.log"):
        yield Owned(f"http://127.0.0.1:{port}", f"127.0.0.1:{grpc_port}")


def list_as(owned: Owned, who: str, binding: str, tenant: str, context: str) -> Any:
    """Two tasks created by ``who`` in ``context``, then ListTasks of the context."""
    card = f"{owned.http}/{tenant}/.well-known/agent-card.json"
    extra = ["--context", context, "--api-key", KEYS[who], "--card-url", card]
    if binding == "GRPC":
        return run_client("1.0", owned.grpc, binding, "list_tasks", tenant=tenant,
                          extra=extra)
    return run_client("1.0", f"{owned.http}/{tenant}", binding, "list_tasks", extra=extra)


@pytest.mark.parametrize(("binding", "tenant"), PAIRS)
def test_each_principal_lists_its_own_tasks(owned: Owned, binding: str, tenant: str) -> None:
    context = uuid.uuid4().hex
    for who in ("alice", "bob"):
        # bob's listing would hold alice's two tasks too, were they not hers.
        assert list_as(owned, who, binding, tenant, context) == {
            "sameTasks": True, "states": ["completed", "completed"]}, who


def test_a_tenant_without_ownership_shows_everyones(owned: Owned) -> None:
    context = uuid.uuid4().hex
    assert list_as(owned, "alice", "JSONRPC", "shared", context)["sameTasks"] is True
    bob = list_as(owned, "bob", "JSONRPC", "shared", context)
    assert bob == {"sameTasks": False, "states": ["completed"] * 4}


def _rpc(owned: Owned, who: str, method: str, params: dict[str, Any]) -> Any:
    reply = httpx.post(f"{owned.http}/shared", json={
        "jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"A2A-Version": "1.0", "x-api-key": KEYS[who]}, timeout=30)
    assert "result" in reply.json(), reply.text
    return reply.json()["result"]


def test_push_config_credentials_go_to_their_owner_only(owned: Owned) -> None:
    """Alice's push config on a shared task, relayed to the a2a-sdk 0.3.26 agent (which
    holds and echoes the relay's URL and token): alice gets hers back, bob none."""
    task = _rpc(owned, "alice", "SendMessage", {"message": {
        "messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "slow"}]},
        "configuration": {"returnImmediately": True}})["task"]
    cfg = {"taskId": task["id"], "id": "c1", "url": "https://hooks.example/alice-secret",
           "token": "alice-tok",
           "authentication": {"scheme": "Bearer", "credentials": "alice-cred"}}
    try:
        assert _rpc(owned, "alice", "CreateTaskPushNotificationConfig", cfg) == cfg
        get = {"taskId": task["id"], "id": "c1"}
        assert _rpc(owned, "alice", "GetTaskPushNotificationConfig", get) == cfg
        seen = [_rpc(owned, "bob", "GetTaskPushNotificationConfig", get),
                *_rpc(owned, "bob", "ListTaskPushNotificationConfigs",
                      {"taskId": task["id"]})["configs"]]
        for other in seen:
            assert "token" not in other and "credentials" not in other.get("authentication", {})
            assert other["id"] == "c1" and "/_relay/" in other["url"]
            assert "alice" not in str(other)
    finally:
        _rpc(owned, "alice", "CancelTask", {"id": task["id"]})
