"""Per-operation interface fallback with the a2a-sdk 0.3.26 agent: its REST and gRPC
servers lack push-config list and delete, its JSON-RPC server has them, and its card
lists all three. A gateway configured for REST or gRPC serves list and delete through the
JSON-RPC interface, learns it once per operation, logs and counts it; with
`fallback: false` the caller gets what the configured interface says."""

from __future__ import annotations

import os
from typing import Any

import aiohttp
from structlog.testing import capture_logs

from gateway.observability.metrics import FALLBACKS
from tests.support.helpers import MakeGateway
from tests.support.interop_support import Deployment, card_url

V10 = {"A2A-Version": "1.0"}
LIST, DELETE = "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=V10) as resp:
        return await resp.json()


async def push_crud(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    message = {"messageId": os.urandom(6).hex(), "role": "ROLE_USER",
               "parts": [{"text": "input: x"}]}
    task = (await rpc(http, url, "SendMessage", {"message": message}))["result"]["task"]
    cfg = {"taskId": task["id"], "id": "c1", "url": "http://127.0.0.1:9/hook"}
    assert "result" in await rpc(http, url, "CreateTaskPushNotificationConfig", cfg)
    out = {"listed": [await rpc(http, url, LIST, {"taskId": task["id"]}) for _ in range(3)],
           "deleted": await rpc(http, url, DELETE, {"taskId": task["id"], "id": "c1"}),
           "after": await rpc(http, url, LIST, {"taskId": task["id"]})}
    await rpc(http, url, "CancelTask", {"id": task["id"]})
    return out


async def test_push_list_and_delete_over_the_agents_json_rpc(
        deployment: Deployment, make_gateway: MakeGateway, http: aiohttp.ClientSession,
        ) -> None:
    agent = deployment.agents["0.3"]
    rest = {"url": f"http://127.0.0.1:{agent.rest}", "version": "0.3", "binding": "HTTP+JSON"}
    grpc = {"url": f"127.0.0.1:{agent.grpc}", "version": "0.3", "binding": "GRPC",
            "card": card_url(agent)}  # a gRPC address names no card of its own
    gw = await make_gateway({"rest": {"backend": rest}, "grpc": {"backend": grpc},
                             "rest-off": {"backend": {**rest, "fallback": False}},
                             "grpc-off": {"backend": {**grpc, "fallback": False}}})
    for tenant in ("rest", "grpc"):
        before = {op: FALLBACKS.labels(tenant, op, "JSONRPC")._value.get()
                  for op in (LIST, DELETE)}
        with capture_logs() as logs:
            got = await push_crud(http, f"{gw}/{tenant}")
        for listed in got["listed"]:
            assert [c["id"] for c in listed["result"]["configs"]] == ["c1"], listed
        assert got["deleted"] == {"jsonrpc": "2.0", "id": 1, "result": None}
        assert got["after"]["result"].get("configs", []) == []
        learned = [(e["operation"], e["configured"], e["serves"]) for e in logs
                   if e["event"] == "backend interface fallback"]
        configured = rest["binding"] if tenant == "rest" else "GRPC"
        assert learned == [(LIST, configured, "JSONRPC"), (DELETE, configured, "JSONRPC")]
        calls = {op: FALLBACKS.labels(tenant, op, "JSONRPC")._value.get() - before[op]
                 for op in (LIST, DELETE)}
        assert calls == {LIST: 4, DELETE: 1}
    off = await push_crud(http, f"{gw}/rest-off")
    assert off["listed"][0]["error"]["data"][0]["reason"] == "INTERNAL_ERROR"
    assert off["deleted"]["error"]["data"][0]["reason"] == "UNSUPPORTED_OPERATION"
    off = await push_crud(http, f"{gw}/grpc-off")
    assert off["listed"][0]["error"]["data"][0]["reason"] == "UNSUPPORTED_OPERATION"


async def test_what_the_clients_own_request_lost_is_still_reported_after_a_fallback(
        deployment: Deployment, make_gateway: MakeGateway, http: aiohttp.ClientSession,
        ) -> None:
    """A v0.3 client's `tasks/pushNotificationConfig/list` with `metadata` (which v1.0's
    request has no place for: dropped while decoding it) to a tenant configured for the
    agent's REST interface, which lacks the operation: served through JSON-RPC, and
    `params.metadata` is still reported — on the first call (the fallback found) and on
    later ones (the interface known). Without the fork of the loss report the fallback
    started from an empty one, and the caller was never told."""
    agent = deployment.agents["0.3"]
    rest = {"url": f"http://127.0.0.1:{agent.rest}", "version": "0.3", "binding": "HTTP+JSON"}
    gw = await make_gateway({"rest": {"backend": rest}})
    url = f"{gw}/rest"
    message = {"messageId": os.urandom(6).hex(), "role": "ROLE_USER",
               "parts": [{"text": "input: x"}]}
    task = (await rpc(http, url, "SendMessage", {"message": message}))["result"]["task"]
    cfg = {"taskId": task["id"], "id": "c1", "url": "http://127.0.0.1:9/hook"}
    assert "result" in await rpc(http, url, "CreateTaskPushNotificationConfig", cfg)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/pushNotificationConfig/list",
            "params": {"id": task["id"], "metadata": {"trace": "x"}}}
    for _ in range(2):  # the fallback found, then the interface known
        async with http.post(url, json=body) as resp:
            answer = await resp.json()
            dropped = resp.headers.get("A2A-Gateway-Dropped", "")
        assert [c["pushNotificationConfig"]["id"] for c in answer["result"]] == ["c1"], answer
        assert "params.metadata" in dropped.split(","), (dropped, answer)
    await rpc(http, url, "CancelTask", {"id": task["id"]})
