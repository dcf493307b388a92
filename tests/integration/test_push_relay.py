"""The push relay (README "Push notifications"): seals and keys, the SSRF guard, and
deliveries across versions through real gateways, the demo agent (v0.3) and webhook
receivers, all on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from gateway.config.models import PushRelayConfig, parse_config
from gateway.relay.delivery import COUNTERS
from gateway.relay.hooks import PushRelay
from gateway.relay.seals import SealError, load_keys, sealed_part
from tests.support.helpers import MakeGateway, free_port, serving, v03
from tests.support.waiting import wait_until
from translators.webhooks import RelayTarget

V10 = {"A2A-Version": "1.0"}
LOOPBACK_OK = {"webhook_allowlist": ["127.0.0.1"]}


def new_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def target(**changes: Any) -> RelayTarget:
    fields: dict[str, Any] = {
        "url": "http://127.0.0.1:9/hook", "client_version": "1.0", "backend_version": "0.3",
        "tenant": "demo", "relay_token": "relay-tok", "issued_at": int(time.time()),
        "token": "tok", "authentication": ("Bearer", "s3cr3t"), "config_id": "c1",
        "task_id": "t1"}
    fields.update(changes)
    return RelayTarget(**fields)


def relay(**settings: Any) -> PushRelay:
    """A relay for seal tests (no gateway behind it)."""
    config = parse_config({"tenants": {"t": v03("http://127.0.0.1:1/")},
                           "push_relay": settings})
    return PushRelay(config, cast(Any, None), environ={})


def seal(r: PushRelay, t: RelayTarget) -> str:
    return r.sealer.seal(t)


def open_seal(r: PushRelay, sealed: str, *, check_age: bool = True) -> RelayTarget:
    return r.sealer.open(sealed, check_age=check_age)


# ---------------------------------------------------------------- seals and keys


def test_seal_round_trip() -> None:
    r = relay(keys=[new_key()])
    t = target()
    sealed = seal(r, t)
    assert open_seal(r, sealed, check_age=True) == t
    # URL-safe, and nothing of the payload readable in it.
    assert sealed.replace("-", "").replace("_", "").isalnum()
    raw = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
    assert b"s3cr3t" not in raw and b"127.0.0.1" not in raw
    assert sealed_part(r.base + sealed) == sealed
    assert sealed_part("http://hooks.example/x") is None


def test_tampered_or_foreign_seal_is_refused() -> None:
    r = relay(keys=[new_key()])
    sealed = seal(r, target())
    middle = len(sealed) // 2
    flipped = sealed[:middle] + ("A" if sealed[middle] != "A" else "B") + sealed[middle + 1:]
    with pytest.raises(SealError, match="tampered"):
        open_seal(r, flipped, check_age=True)
    with pytest.raises(SealError, match="malformed"):
        open_seal(r, sealed[:20], check_age=True)
    with pytest.raises(SealError, match="key this gateway does not have"):
        open_seal(relay(keys=[new_key()]), sealed)


def test_key_rotation_old_key_still_opens() -> None:
    old, new = new_key(), new_key()
    sealed_old = seal(relay(keys=[old]), target())
    rotated = relay(keys=[new, old])
    assert open_seal(rotated, sealed_old, check_age=True) == target(
        issued_at=open_seal(rotated, sealed_old, check_age=True).issued_at)
    sealed_new = seal(rotated, target())  # sealed with the first (newest) key
    assert open_seal(relay(keys=[new]), sealed_new, check_age=True).url == target().url
    with pytest.raises(SealError):
        open_seal(relay(keys=[old]), sealed_new, check_age=True)
    with pytest.raises(SealError):
        open_seal(relay(keys=[new]), sealed_old, check_age=True)  # old key retired


def test_keys_from_env_win_and_generated_key_is_stable() -> None:
    a, b = new_key(), new_key()
    settings = PushRelayConfig(keys=[a])
    keys, source = load_keys(settings, {"A2A_GATEWAY_RELAY_KEYS": f"{b}, {a}"})
    assert source == "env A2A_GATEWAY_RELAY_KEYS" and len(keys) == 2
    assert keys[0] == base64.urlsafe_b64decode(b)
    assert load_keys(settings, {})[1] == "config push_relay.keys"
    first, source = load_keys(PushRelayConfig(), {})
    assert source == "generated" and load_keys(PushRelayConfig(), {})[0] == first


def test_expired_seal() -> None:
    r = relay(keys=[new_key()], seal_max_age=60)
    sealed = seal(r, target(issued_at=int(time.time()) - 120))
    with pytest.raises(SealError, match="expired"):
        open_seal(r, sealed, check_age=True)
    assert open_seal(r, sealed, check_age=False).url == target().url  # get/list still restore


# ---------------------------------------------------------------- through gateways


Hooks = tuple[str, "asyncio.Queue[tuple[str, dict[str, str], Any]]"]


@pytest.fixture
async def receiver() -> AsyncIterator[Hooks]:
    """A webhook receiver on 127.0.0.1 that records (path, headers, JSON body)."""
    received: asyncio.Queue[tuple[str, dict[str, str], Any]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put((request.path, dict(request.headers), await request.json()))
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/{name}", hook)
    async with serving(app) as base:
        yield f"{base}", received


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        reply: dict[str, Any] = await resp.json()
        return reply


def p10_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}-{os.urandom(3).hex()}", "role": "ROLE_USER",
            "parts": [{"text": text}], **extra}


def j03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "messageId": f"m-{text}-{os.urandom(3).hex()}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


async def next_hook(received: asyncio.Queue[tuple[str, dict[str, str], Any]], path: str,
                    done: Any) -> tuple[dict[str, str], Any]:
    """The first notification on ``path`` whose body satisfies ``done``."""
    while True:
        got_path, headers, body = await asyncio.wait_for(received.get(), 10)
        if got_path == path and done(body):
            return headers, body


def v10_state(body: Any) -> str:
    return str(body.get("task", {}).get("status", {}).get("state", ""))


async def test_v10_client_behind_v03_backend_gets_stream_responses(
        make_gateway: MakeGateway, demo_agent: str, receiver: Hooks,
        http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)}) + "/"
    base, received = receiver
    first = (await rpc(http, gw, "SendMessage", {"message": p10_message("input: trip")},
                       V10))["result"]["task"]
    cfg = {"taskId": first["id"], "id": "c1", "url": f"{base}/v10", "token": "tok",
           "authentication": {"scheme": "Bearer", "credentials": "s3cr3t"}}
    created = await rpc(http, gw, "CreateTaskPushNotificationConfig", cfg, V10)
    assert created["result"] == cfg
    # Get and list answer with the client's own config ...
    got = await rpc(http, gw, "GetTaskPushNotificationConfig",
                    {"taskId": first["id"], "id": "c1"}, V10)
    assert got["result"] == cfg
    listed = await rpc(http, gw, "ListTaskPushNotificationConfigs", {"taskId": first["id"]},
                       V10)
    assert listed["result"] == {"configs": [cfg]}
    # ... while the backend holds the relay URL and a relay token.
    held = await rpc(http, demo_agent, "tasks/pushNotificationConfig/get",
                     {"id": first["id"], "pushNotificationConfigId": "c1"})
    inner = held["result"]["pushNotificationConfig"]
    assert inner["url"].startswith(gw + "_relay/") and inner["token"] != "tok"
    assert "authentication" not in inner

    await rpc(http, gw, "SendMessage", {"message": p10_message(
        "Paris", taskId=first["id"], contextId=first["contextId"])}, V10)
    headers, body = await next_hook(received, "/v10",
                                    lambda b: v10_state(b) == "TASK_STATE_COMPLETED")
    assert set(body) == {"task"} and body["task"]["id"] == first["id"]
    assert body["task"]["artifacts"][0]["parts"][0]["text"] == "trip from Paris"
    assert headers["Content-Type"] == "application/a2a+json"
    assert headers["Authorization"] == "Bearer s3cr3t"
    assert headers["X-A2A-Notification-Token"] == "tok"

    # Delete by the client's own id.
    deleted = await rpc(http, gw, "DeleteTaskPushNotificationConfig",
                        {"taskId": first["id"], "id": "c1"}, V10)
    assert deleted["result"] is None
    listed = await rpc(http, gw, "ListTaskPushNotificationConfigs", {"taskId": first["id"]},
                       V10)
    assert listed["result"].get("configs", []) == []


async def test_inline_config_in_send_message_is_relayed(
        make_gateway: MakeGateway, demo_agent: str, receiver: Hooks,
        http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)}) + "/"
    base, received = receiver
    reply = await rpc(http, gw, "SendMessage", {
        "message": p10_message("task: inline"),
        "configuration": {"taskPushNotificationConfig": {"url": f"{base}/inline",
                                                         "token": "inline-tok"}}}, V10)
    task = reply["result"]["task"]
    headers, body = await next_hook(received, "/inline",
                                    lambda b: v10_state(b) == "TASK_STATE_COMPLETED")
    assert body["task"]["id"] == task["id"]
    assert headers["X-A2A-Notification-Token"] == "inline-tok"
    assert "Authorization" not in headers
    # The inline config got the task id as its id; get gives back the client's values.
    got = await rpc(http, gw, "GetTaskPushNotificationConfig",
                    {"taskId": task["id"], "id": task["id"]}, V10)
    assert got["result"]["url"] == f"{base}/inline" and got["result"]["token"] == "inline-tok"


async def test_inline_config_refused_by_the_ssrf_guard(
        make_gateway: MakeGateway, demo_agent: str, http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)}, push_relay={}) + "/"
    reply = await rpc(http, gw, "SendMessage", {
        "message": p10_message("task: x"),
        "configuration": {"taskPushNotificationConfig": {
            "url": "http://169.254.169.254/latest/meta-data"}}}, V10)
    assert reply["error"]["code"] == -32602
    assert "http://169.254.169.254/latest/meta-data" in reply["error"]["message"]
    reply = await rpc(http, gw, "CreateTaskPushNotificationConfig", {
        "taskId": "t", "url": "http://[::1]:9/hook"}, V10)
    assert reply["error"]["code"] == -32602 and "loopback" in reply["error"]["message"]


@pytest.fixture
async def chained(make_gateway: MakeGateway, demo_agent: str) -> tuple[str, str]:
    """Gateway A (v0.3 clients) → v1.0 JSON-RPC → gateway B → v0.3 demo agent."""
    key = new_key()
    inner = await make_gateway({"demo": v03(demo_agent)})
    outer = await make_gateway({"b": v03(inner + "/", version="1.0")},
                               push_relay={**LOOPBACK_OK, "keys": [key]})
    return outer + "/", key


async def test_v03_client_behind_v10_backend_gets_tasks(
        chained: tuple[str, str], receiver: Hooks, http: aiohttp.ClientSession) -> None:
    gw, _ = chained
    base, received = receiver
    first = (await rpc(http, gw, "message/send", {"message": j03_message("input: trip")}))[
        "result"]
    cfg = {"taskId": first["id"], "pushNotificationConfig": {
        "id": "c1", "url": f"{base}/v03", "token": "tok03",
        "authentication": {"schemes": ["Bearer"], "credentials": "s3"}}}
    assert (await rpc(http, gw, "tasks/pushNotificationConfig/set", cfg))["result"] == cfg
    got = await rpc(http, gw, "tasks/pushNotificationConfig/get",
                    {"id": first["id"], "pushNotificationConfigId": "c1"})
    assert got["result"] == cfg
    await rpc(http, gw, "message/send", {"message": j03_message(
        "Paris", taskId=first["id"], contextId=first["contextId"])})
    headers, body = await next_hook(
        received, "/v03", lambda b: b.get("status", {}).get("state") == "completed")
    assert body["kind"] == "task" and body["id"] == first["id"]
    assert body["artifacts"][0]["parts"][0] == {"kind": "text", "text": "trip from Paris"}
    assert headers["Content-Type"] == "application/json"
    assert headers["X-A2A-Notification-Token"] == "tok03"


async def test_v10_events_become_task_snapshots_for_v03_clients(
        chained: tuple[str, str], receiver: Hooks, http: aiohttp.ClientSession) -> None:
    """What a v1.0 agent posts (a status update, not a Task) reaches a v0.3 client as the
    Task fetched from the backend; this posts as the backend would, to the relay URL."""
    gw, key = chained
    base, received = receiver
    task = (await rpc(http, gw, "message/send", {"message": j03_message("task: snap")}))[
        "result"]
    sealer = relay(keys=[key])
    t = target(url=f"{base}/snap", client_version="0.3", backend_version="1.0", tenant="b",
               task_id=task["id"], token="tok03", authentication=None)
    event = {"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"],
                              "status": {"state": "TASK_STATE_COMPLETED"}}}
    async with http.post(gw + "_relay/" + seal(sealer, t), json=event,
                         headers={"Authorization": "Bearer relay-tok"}) as resp:
        assert resp.status == 202
    headers, body = await next_hook(received, "/snap", lambda b: True)
    assert body["kind"] == "task" and body["status"]["state"] == "completed"
    assert body["artifacts"][0]["parts"][0]["text"] == "built snap"  # fetched, not implied
    assert headers["X-A2A-Notification-Token"] == "tok03" and "Authorization" not in headers


async def test_relay_endpoint_refusals(chained: tuple[str, str],
                                       http: aiohttp.ClientSession) -> None:
    gw, key = chained
    good = seal(relay(keys=[key]), target(tenant="b", backend_version="1.0"))
    token = {"X-A2A-Notification-Token": "relay-tok"}
    event = {"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}}
    for sealed, headers, body, status, needle in [
        (good[:-3] + ("AAA" if good[-3:] != "AAA" else "BBB"), token, event, 403, "tampered"),
        (seal(relay(keys=[new_key()]), target()), token, event, 403, "key"),
        (seal(relay(keys=[key]), target(issued_at=0)), token, event, 403, "expired"),
        (good, {}, event, 403, "token"),
        (good, {"X-A2A-Notification-Token": "wrong"}, event, 403, "token"),
        (good, token, {"task": {"id": "other", "status": {}}}, 403, "another task"),
        (good, token, {"nope": 1}, 400, "push relay"),
    ]:
        async with http.post(gw + "_relay/" + sealed, json=body, headers=headers) as resp:
            assert resp.status == status, needle
            assert needle in (await resp.json())["error"]["message"]


async def test_receiver_down_retries_then_logs_and_counts(
        make_gateway: MakeGateway, demo_agent: str, http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)}, push_relay={
        **LOOPBACK_OK, "retries": 2, "backoff": 0.01, "timeout": 2}) + "/"
    dead = free_port()  # nothing listens there
    first = (await rpc(http, gw, "SendMessage", {"message": p10_message("input: x")},
                       V10))["result"]["task"]
    await rpc(http, gw, "CreateTaskPushNotificationConfig", {
        "taskId": first["id"], "id": "c1", "url": f"http://127.0.0.1:{dead}/hook?k=secret",
        "token": "tok-never-logged",
        "authentication": {"scheme": "Bearer", "credentials": "cred-never-logged"}}, V10)
    failed, retried = COUNTERS.failed, COUNTERS.retried
    with capture_logs() as logs:
        await rpc(http, gw, "SendMessage", {"message": p10_message(
            "Paris", taskId=first["id"], contextId=first["contextId"])}, V10)
        await wait_until(lambda: COUNTERS.failed > failed, "a failed delivery counted")
    assert COUNTERS.failed > failed
    assert COUNTERS.retried >= retried + 2
    lines = [e for e in logs if e["event"] == "push relay delivery failed"]
    assert lines, logs
    line = lines[0]
    assert line["log_level"] == "warning"
    assert line["tenant"] == "demo" and line["task_id"] == first["id"]
    assert line["webhook"] == f"127.0.0.1:{dead}" and line["attempts"] == 3
    assert line["error"]
    text = repr(line)
    assert "never-logged" not in text and "secret" not in text


async def test_delivery_resolves_through_the_guard(
        make_gateway: MakeGateway, demo_agent: str, receiver: Hooks,
        http: aiohttp.ClientSession) -> None:
    """A relay URL accepted earlier whose host now resolves to a forbidden address (say,
    DNS rebinding) is refused at delivery: the resolver checks every address."""
    key = new_key()
    gw = await make_gateway({"demo": v03(demo_agent)}, push_relay={"keys": [key]}) + "/"
    base, _ = receiver
    port = base.rsplit(":", 1)[1]
    sealed = seal(relay(keys=[key]), target(url=f"http://localhost:{port}/rebound",
                                           task_id=""))
    failed = COUNTERS.failed
    with capture_logs() as logs:
        async with http.post(gw + "_relay/" + sealed, json={"kind": "task", "id": "t9",
                             "contextId": "c", "status": {"state": "working"}},
                             headers={"X-A2A-Notification-Token": "relay-tok"}) as resp:
            assert resp.status == 202
        await wait_until(lambda: COUNTERS.failed > failed, "a failed delivery counted")
    line = next(e for e in logs if e["event"] == "push relay delivery failed")
    assert "SSRF guard" in line["error"] and "loopback" in line["error"]
    assert line["attempts"] == 1  # a refusal is not retried


async def test_always_relays_same_version_and_passes_bodies_through(
        make_gateway: MakeGateway, demo_agent: str, receiver: Hooks,
        http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)},
                            push_relay={**LOOPBACK_OK, "always": True}) + "/"
    base, received = receiver
    task = (await rpc(http, gw, "message/send", {
        "message": j03_message("task: same"),
        "configuration": {"pushNotificationConfig": {"url": f"{base}/same",
                                                     "token": "t03"}}}))["result"]
    held = await rpc(http, demo_agent, "tasks/pushNotificationConfig/get", {"id": task["id"]})
    assert "/_relay/" in held["result"]["pushNotificationConfig"]["url"]
    headers, body = await next_hook(
        received, "/same", lambda b: b.get("status", {}).get("state") == "completed")
    assert body["kind"] == "task" and body["id"] == task["id"]
    assert headers["X-A2A-Notification-Token"] == "t03"
    assert headers["Content-Type"] == "application/json"


async def test_same_version_without_always_is_not_relayed(
        make_gateway: MakeGateway, demo_agent: str, http: aiohttp.ClientSession) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)}) + "/"
    task = (await rpc(http, gw, "message/send", {"message": j03_message("slow"),
                                                 "configuration": {"blocking": False}}))[
        "result"]
    # A name that never resolves (.invalid) passes the SSRF guard at registration.
    cfg = {"taskId": task["id"],
           "pushNotificationConfig": {"id": "c", "url": "http://hooks.invalid/h"}}
    assert (await rpc(http, gw, "tasks/pushNotificationConfig/set", cfg))["result"] == cfg
    held = await rpc(http, demo_agent, "tasks/pushNotificationConfig/get",
                     {"id": task["id"], "pushNotificationConfigId": "c"})
    assert held["result"]["pushNotificationConfig"]["url"] == "http://hooks.invalid/h"
    await rpc(http, gw, "tasks/cancel", {"id": task["id"]})


class _StubBackend:
    """Answers the relay's task fetches with a fixed completed task, counting them."""

    def __init__(self) -> None:
        self.calls = 0

    async def fetch_task(self, tenant: str, task_id: str, client_version: str) -> Any:
        from a2a.types import a2a_pb2 as pb

        self.calls += 1
        await asyncio.sleep(0.01)
        return pb.Task(id=task_id, context_id="ctx",
                       status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_COMPLETED))


async def test_v03_snapshots_are_coalesced_and_not_repeated(receiver: Hooks) -> None:
    """Snapshots queued behind one not yet made are one (one fetch covers them); a
    snapshot equal to the one just delivered on its lane is not sent again."""
    from a2a.types import a2a_pb2 as pb

    from gateway.state.relay_queue import NewDelivery

    base, received = receiver
    stub = _StubBackend()
    r = relay(webhook_allowlist=["127.0.0.1"], keys=[new_key()])
    r.deliverer.fetch_task = stub.fetch_task
    t = target(url=f"{base}/coalesce", client_version="0.3", backend_version="1.0",
               task_id="t1", authentication=None)
    sealed = seal(r, t)
    event = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t1", context_id="ctx",
        status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_WORKING)))

    def item(n: int) -> NewDelivery:
        return NewDelivery(tenant="demo", lane="seal:t1", webhook_id=f"msg_{n}",
                           sealed=sealed, task_id="t1", body=None,
                           event=event.SerializeToString(), dropped="[]", trace="{}")

    coalesced = COUNTERS.coalesced
    try:
        # Three events queued at once (the worker claims the first only after them).
        outcomes = await asyncio.gather(*(r.enqueue(item(n)) for n in range(3)))
        assert sorted(outcomes) == ["coalesced", "coalesced", "queued"]
        _, _, body = await asyncio.wait_for(received.get(), 5)
        assert body["kind"] == "task" and body["status"]["state"] == "completed"
        assert await r.enqueue(item(3)) == "queued"  # the same state again
        await wait_until(lambda: COUNTERS.coalesced > coalesced, "the repeat coalesced")
    finally:
        await r.close()
    assert received.empty()  # one delivery for all four events
    assert stub.calls == 2


async def test_a_full_queue_and_a_large_body_are_refused_not_acknowledged(
        make_gateway: MakeGateway, http: aiohttp.ClientSession) -> None:
    """Not stored, not answered 2xx: a tenant's full queue is a 503 with Retry-After (the
    agent retries), a body over queue.max_body a 413."""
    key = new_key()
    dead = free_port()  # nothing listens: the first delivery stays queued
    gw = await make_gateway({"demo": v03("http://127.0.0.1:9/")}, push_relay={
        **LOOPBACK_OK, "keys": [key], "retries": 30, "backoff": 60,
        "queue": {"max_per_tenant": 1, "max_body": 400}}) + "/"
    sealed = seal(relay(keys=[key]), target(url=f"http://127.0.0.1:{dead}/hook",
                                           client_version="1.0", backend_version="0.3"))
    token = {"X-A2A-Notification-Token": "relay-tok"}

    def task(state: str, note: str = "") -> dict[str, Any]:
        return {"kind": "task", "id": "t1", "contextId": "c", "status": {"state": state},
                "metadata": {"note": note}}

    async with http.post(gw + "_relay/" + sealed, json=task("working"),
                         headers=token) as resp:
        assert resp.status == 202
    with capture_logs() as logs:
        async with http.post(gw + "_relay/" + sealed, json=task("completed"),
                             headers=token) as resp:
            assert resp.status == 503 and resp.headers["Retry-After"] == "1"
            assert "queue is full" in (await resp.json())["error"]["message"]
    full = next(e for e in logs if e["event"] == "push relay queue full: notification "
                "refused")
    assert full["tenant"] == "demo" and full["limit"] == 1
    async with http.post(gw + "_relay/" + sealed, json=task("working", "x" * 500),
                         headers=token) as resp:
        assert resp.status == 413
        assert "push_relay.queue.max_body" in (await resp.json())["error"]["message"]
