"""Migration mode's interop plumbing (tests/interop/test_migration_interop.py): the official
SDK agents started with a name they sign their texts with (peers/_peer_common.py, Voice),
gateway processes whose tenants migrate from one to the other, a raw JSON-RPC client of
both versions for the many-conversation runs, the admin report, and the SDK clients'
owner_* scenarios (peers/_owner_scenarios.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from gateway.migration.sticky import point
from tests.support.helpers import (
    PEERS,
    SDK_PYTHON,
    free_port,
    gateway_cmd,
    running,
    write_config,
)
from tests.support.interop_support import run_client

PRIMARY = "sdk-0.3.26"  # the names the agents sign with: who answered a call
CANDIDATE = "sdk-1.3.0"
NAMES = {"primary": PRIMARY, "candidate": CANDIDATE}
_SIGNED = re.compile(r" \[([^\]]+)\]$")


@dataclass
class Agent:
    url: str
    process: subprocess.Popen[bytes]


def start_agent(stack: ExitStack, logs: Path, version: str, name: str | None = None,
                variant: str | None = None) -> Agent:
    """An SDK agent (JSON-RPC only) for the stack's life. ``name``: what it signs its
    texts with; ``variant``: --answer-variant."""
    port = free_port()
    script = PEERS / ("agent_v03.py" if version == "0.3" else "agent_v10.py")
    cmd = [str(SDK_PYTHON[version]), str(script), "--jsonrpc-port", str(port)]
    cmd += ["--name", name] if name else []
    cmd += ["--answer-variant", variant] if variant else []
    label = f"agent-{name or version}-{variant or 'plain'}-{port}"
    process = stack.enter_context(running(cmd, port, log=logs / f"{label}.log", timeout=90))
    return Agent(f"http://127.0.0.1:{port}/", process)


def start_receiver(stack: ExitStack, logs: Path) -> tuple[str, Path]:
    """The webhook receiver (peers/webhook_receiver.py): its base URL and its records."""
    port, out = free_port(), logs / "hooks.jsonl"
    stack.enter_context(running(
        [sys.executable, str(PEERS / "webhook_receiver.py"), "--port", str(port),
         "--out", str(out)], port, log=logs / "receiver.log"))
    return f"http://127.0.0.1:{port}", out


def migrating(primary: str, candidate: str, **migration: Any) -> dict[str, Any]:
    """A tenant whose v0.3 primary migrates to a v1.0 candidate (JSON-RPC both)."""
    return {"backend": {"url": primary, "version": "0.3"},
            "migration": {"candidate": {"url": candidate, "version": "1.0"}, **migration}}


@dataclass
class Gateway:
    http: str  # base URL
    grpc: str  # host:port
    log: Path


def start_gateway(stack: ExitStack, logs: Path, name: str, tenants: dict[str, Any],
                  state: dict[str, Any] | None = None) -> Gateway:
    """A gateway process for the stack's life. Its admin API is on the main listener
    (no auth configured: open); ``state``: the store (default SQLite beside its config)."""
    port, grpc_port = free_port(), free_port()
    config: dict[str, Any] = {
        "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
        "tenants": tenants,
        # The clients' webhook receiver is on 127.0.0.1, which the SSRF guard refuses
        # unless allow-listed.
        "push_relay": {"webhook_allowlist": ["127.0.0.1"]},
    }
    if state is not None:
        config["state"] = state
    path = write_config(logs / f"{name}.yaml", config)
    log = logs / f"{name}.log"
    stack.enter_context(running(gateway_cmd(path), port, log=log))
    return Gateway(f"http://127.0.0.1:{port}", f"127.0.0.1:{grpc_port}", log)


async def report(http: aiohttp.ClientSession, gateway: Gateway, tenant: str,
                 last: int = 50) -> dict[str, Any]:
    """The tenant's migration report from the gateway's admin API."""
    async with http.get(f"{gateway.http}/_admin/migration/{tenant}",
                        params={"last": str(last)}) as resp:
        assert resp.status == 200, await resp.text()
        answer: dict[str, Any] = await resp.json()
        return answer


def signer(text: str | None) -> str | None:
    """The name an agent signed ``text`` with (None: unsigned)."""
    found = _SIGNED.search(text or "")
    return found.group(1) if found else None


def context_on(tenant: str, arm: str, share: float, prefix: str) -> str:
    """A contextId whose new conversation the canary gives to ``arm`` at ``share`` (the
    gateway's stable hash of tenant and contextId, gateway/migration/sticky.py)."""
    for n in range(1000):
        context = f"{prefix}-{n}"
        if (point(tenant, context) < share) == (arm == "candidate"):
            return context
    raise AssertionError(f"no contextId of {prefix!r} on the {arm} side of {share}")


# --------------------------------------------------------------------------- raw client


class RawClient:
    """JSON-RPC as a v0.3 or a v1.0 client sends it, results reduced to what the tests
    read: a task's (or message's) ids, state and texts, or the error as the client got
    it."""

    def __init__(self, http: aiohttp.ClientSession, url: str, version: str) -> None:
        self.http = http
        self.url = url
        self.version = version

    async def _rpc(self, v03: str, v10: str, params: dict[str, Any]) -> dict[str, Any]:
        method, headers = (v03, {}) if self.version == "0.3" else (v10, {"A2A-Version": "1.0"})
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        async with self.http.post(self.url, json=body, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            answer: dict[str, Any] = await resp.json()
        if "error" in answer:
            return {"error": answer["error"]}
        return _reduced(answer["result"])

    async def send(self, text: str, *, context_id: str = "", task_id: str = "",
                   webhook: dict[str, str] | None = None) -> dict[str, Any]:
        """``webhook``: a push config given inline, {"url", "token", "credentials"}."""
        message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "parts": []}
        if self.version == "0.3":
            message.update(kind="message", role="user", parts=[{"kind": "text", "text": text}])
        else:
            message.update(role="ROLE_USER", parts=[{"text": text}])
        if context_id:
            message["contextId"] = context_id
        if task_id:
            message["taskId"] = task_id
        params: dict[str, Any] = {"message": message}
        if webhook and self.version == "0.3":
            params["configuration"] = {"pushNotificationConfig": {
                "url": webhook["url"], "token": webhook["token"], "authentication": {
                    "schemes": ["Bearer"], "credentials": webhook["credentials"]}}}
        elif webhook:
            params["configuration"] = {"taskPushNotificationConfig": {
                "url": webhook["url"], "token": webhook["token"], "authentication": {
                    "scheme": "Bearer", "credentials": webhook["credentials"]}}}
        return await self._rpc("message/send", "SendMessage", params)

    async def get_task(self, task_id: str) -> dict[str, Any]:
        return await self._rpc("tasks/get", "GetTask", {"id": task_id})


def _texts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if "text" in p]


def _reduced(result: dict[str, Any]) -> dict[str, Any]:
    item = result.get("task") or result.get("message") or result  # v1.0 wraps, v0.3 not
    status = item.get("status", {})
    texts = [t for a in item.get("artifacts", []) for t in _texts(a["parts"])]
    texts += _texts(status.get("message", {}).get("parts", []))
    texts += _texts(item.get("parts", []))  # a message
    state = status.get("state")
    return {"id": item.get("id") or item.get("taskId"), "contextId": item.get("contextId"),
            "state": state.lower().removeprefix("task_state_").replace("_", "-")
            if state else None, "texts": texts,
            "signers": sorted({signer(t) for t in texts} - {None})}


# --------------------------------------------------------------------------- SDK clients


@dataclass(frozen=True)
class SdkClient:
    version: str  # 0.3 (a2a-sdk 0.3.26) or 1.0 (1.3.0)
    transport: str  # JSONRPC | HTTP+JSON | GRPC

    def run(self, gateway: Gateway, tenant: str, scenario: str, *, context: str = "",
            task: str = "", webhook: str | None = None) -> Any:
        extra = [*(["--context", context] if context else []),
                 *(["--task", task] if task else [])]
        if self.transport == "GRPC":
            return run_client(self.version, gateway.grpc, self.transport, scenario,
                              webhook=webhook, tenant=tenant, extra=extra, timeout=120)
        return run_client(self.version, f"{gateway.http}/{tenant}", self.transport, scenario,
                          webhook=webhook, extra=extra, timeout=120)


def said(step: Any) -> list[str]:
    """The texts an owner_* step shows the agent wrote (status messages, artifacts, a
    message), at any depth."""
    if isinstance(step, str):
        return [step]
    if not isinstance(step, dict):
        return []
    texts = [step["statusText"]] if step.get("statusText") else []
    texts += step.get("texts", [])
    return texts + [t for value in step.values() if isinstance(value, dict)
                    for t in said(value)]


def signers(follow: dict[str, Any]) -> dict[str, set[str | None]]:
    """Who signed the texts of each step of an owner_follow run ({"error"}: it failed);
    the push config steps are left out (a config is the client's own: nothing the agent
    writes)."""
    return {name: {"error"} if isinstance(step, dict) and "error" in step
            else {signer(t) for t in said(step)}
            for name, step in follow.items() if not name.startswith("push")}


def hooks_at(out: Path, path: str) -> list[dict[str, Any]]:
    """What the webhook receiver got at ``path`` ({"headers", "body", "text": the body as
    JSON text}), whole lines only."""
    if not out.exists():
        return []
    lines = out.read_text(encoding="utf-8").split("\n")[:-1]
    return [{**r, "text": json.dumps(r["body"])} for r in map(json.loads, lines)
            if r["path"] == path]
