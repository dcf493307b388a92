"""A rate limit holds across the processes that share a state store: the two workers of
one gateway (SQLite), and two gateway replicas (Redis). Each call goes on a new
connection, so the kernel spreads them over the workers; the replicas take turns."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from structlog.testing import capture_logs

from tests.state.replica_support import demo_agent, gateway
from tests.support.helpers import MakeGateway, free_port
from tests.support.redis_process import RedisProcess
from tests.support.waiting import wait_until

KEY = "shared-limit-key-0123456789"
BURST = 4


def _auth() -> dict[str, Any]:
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    return {"api_keys": {"keys": [{"principal": "p", "sha256": digest}]},
            # Slow enough that no token comes back while the test runs.
            "rate_limits": {"principal": {"rate": 0.01, "burst": BURST}}}


async def statuses(urls: list[str], calls: int) -> list[int]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}}}
    got = []
    for i in range(calls):
        # A new connection each time: another worker may take it.
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(
                force_close=True)) as http, http.post(
                urls[i % len(urls)], json=body, headers={"X-API-Key": KEY}) as resp:
            got.append(resp.status)
    return got


async def test_two_workers_share_one_bucket(tmp_path: Path) -> None:
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        url = gateway(stack, tmp_path, "gw", agent, workers=2, auth=_auth(),
                      state={"path": str(tmp_path / "state.db")})[0] + "/t"
        got = await statuses([url], 3 * BURST)
    assert got.count(200) == BURST and got.count(429) == 2 * BURST, got


async def test_two_replicas_share_one_bucket_through_redis(tmp_path: Path,
                                                           redis_url: str) -> None:
    state = {"backend": "redis", "url": redis_url, "key_prefix": f"{tmp_path.name}:"}
    with demo_agent(tmp_path) as agent, ExitStack() as stack:
        urls = [gateway(stack, tmp_path, name, agent, state=state, auth=_auth())[0] + "/t"
                for name in ("a", "b")]
        got = await statuses(urls, 3 * BURST)
    assert got.count(200) == BURST and got.count(429) == 2 * BURST, got


# ------------------------------------------------ the store down, and back

OUTAGE_KEY = "outage-key-0123456789"


async def _outage_gateway(make_gateway: MakeGateway, agent: str, redis: RedisProcess,
                          policy: str, grpc_port: int) -> str:
    digest = hashlib.sha256(OUTAGE_KEY.encode()).hexdigest()
    return await make_gateway(
        {"t": {"backend": {"url": agent, "version": "0.3"}}}, grpc_port=grpc_port,
        default_tenant="t",
        auth={"api_keys": {"keys": [{"principal": "p", "sha256": digest}]},
              "rate_limits": {"principal": {"rate": 0.01, "burst": BURST},
                              "on_store_outage": policy}},
        state={"backend": "redis", "url": redis.url, "key_prefix": f"{policy}:"})


async def _send(http: aiohttp.ClientSession, url: str, v10: bool = False,
                ) -> tuple[int, dict[str, str], Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage" if v10 else "message/send",
            "params": {"message": {"messageId": "m", "role": "ROLE_USER" if v10 else "user",
                                   "parts": [{"text": "hi"}] if v10 else [
                                       {"kind": "text", "text": "hi"}],
                                   **({} if v10 else {"kind": "message"})}}}
    headers = {"X-API-Key": OUTAGE_KEY, **({"A2A-Version": "1.0"} if v10 else {})}
    async with http.post(url, json=body, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.json(content_type=None)


async def _grpc_send(target: str, version: str) -> None:
    if version == "1.0":
        method, request = "/lf.a2a.v1.A2AService/SendMessage", pb.SendMessageRequest(
            message=pb.Message(message_id="m", role=pb.ROLE_USER, parts=[pb.Part(text="hi")]))
    else:
        method, request = "/a2a.v1.A2AService/SendMessage", v03pb.SendMessageRequest(
            request=v03pb.Message(message_id="m", role=v03pb.ROLE_USER,
                                  content=[v03pb.Part(text="hi")]))
    async with grpc.aio.insecure_channel(target) as channel:
        await channel.unary_unary(method)(
            request.SerializeToString(), metadata=(("x-api-key", OUTAGE_KEY),), timeout=10)


def _tracebacks(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in logs if line.get("log_level") in ("error", "critical")
            or "exc_info" in line]


def _recovered(logs: list[dict[str, Any]]) -> list[str]:
    return [line["event"] for line in logs if line["event"].startswith("rate limits: state")]


@pytest.fixture
def redis() -> Iterator[RedisProcess]:
    server = RedisProcess(free_port()).start()
    yield server
    server.close()


async def test_refuse_during_an_outage_answers_unavailable_in_every_dialect(
        make_gateway: MakeGateway, demo_agent: str, redis: RedisProcess) -> None:
    grpc_port = free_port()
    gw = await _outage_gateway(make_gateway, demo_agent, redis, "refuse", grpc_port)
    async with aiohttp.ClientSession() as http:
        assert (await _send(http, gw + "/t"))[0] == 200
        redis.stop()
        with capture_logs() as logs:
            status, headers, v03 = await _send(http, gw + "/t")
            assert (status, headers.get("Retry-After")) == (503, "1"), v03
            assert v03["error"]["code"] == -32603
            status, headers, v10 = await _send(http, gw + "/t", v10=True)
            assert (status, headers.get("Retry-After")) == (503, "1"), v10
            info = v10["error"]["data"][0]
            assert (info["reason"], info["domain"], info["metadata"]["retry_after"]) == (
                "STORE_UNAVAILABLE", "a2a-gateway", "1")
            async with http.post(gw + "/t/message:send", headers={
                    "X-API-Key": OUTAGE_KEY, "A2A-Version": "1.0"}, json={"message": {
                    "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}) as resp:
                rest = await resp.json()
                assert (resp.status, resp.headers.get("Retry-After")) == (503, "1")
            assert rest["error"]["status"] == "UNAVAILABLE"
            async with http.post(gw + "/t/v1/message:send", headers={
                    "X-API-Key": OUTAGE_KEY}, json={"message": {
                    "messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]}}) \
                    as resp:
                assert (resp.status, resp.headers.get("Retry-After")) == (503, "1")
            for version in ("1.0", "0.3"):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await _grpc_send(f"127.0.0.1:{grpc_port}", version)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, version
                assert dict(refused.value.trailing_metadata() or ())["retry-after"] == "1"
        redis.start()  # back, on the same port: the very next call is served
        with capture_logs() as back:
            assert (await _send(http, gw + "/t"))[0] == 200
    assert _tracebacks(logs) == []
    outcomes = [line["outcome"] for line in logs if line["event"] == "call"]
    assert outcomes == ["STORE_UNAVAILABLE"] * 6
    warned = [line for line in logs if line["event"] == "rate limits: state store unavailable"]
    assert len(warned) == 1, warned
    assert warned[0]["cause"].startswith(f"Redis store {redis.url}: "), warned
    assert any(line["event"] == "rate limits: state store available again" for line in back)


@pytest.mark.parametrize(("policy", "expected"), [("local", [200] * BURST + [429] * 2),
                                                  ("allow", [200] * (BURST + 2))])
async def test_local_and_allow_keep_serving_during_an_outage(
        make_gateway: MakeGateway, demo_agent: str, redis: RedisProcess, policy: str,
        expected: list[int]) -> None:
    gw = await _outage_gateway(make_gateway, demo_agent, redis, policy, free_port())
    async with aiohttp.ClientSession() as http:
        # Spend the shared bucket first: with `local`, the outage starts a full local one.
        assert [(await _send(http, gw + "/t"))[0] for _ in range(BURST + 1)] == \
            [200] * BURST + [429]
        redis.stop()
        with capture_logs() as logs:
            got = [(await _send(http, gw + "/t"))[0] for _ in range(BURST + 2)]
        redis.start()
        # The store is back (empty: it keeps nothing on disk) and rules again once it is
        # asked again, a second after it failed: a full bucket there.
        with capture_logs() as back:
            async def ruled_again() -> bool:
                return (await _send(http, gw + "/t"))[0] == 200 and bool(_recovered(back))

            await wait_until(ruled_again, "the store ruling again", interval=0.05)
    assert got == expected
    assert _recovered(back) == ["rate limits: state store available again"]
    assert _tracebacks(logs) == []
    assert [line["on_store_outage"] for line in logs
            if line["event"] == "rate limits: state store unavailable"] == [policy]
