"""Agent cards, discovery, negotiation and extensions (issue 5; seeds I3-I7, I9, I10)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from gateway.cards.signing import verify
from tests.support.helpers import MakeGateway, free_port, v03

V10 = {"A2A-Version": "1.0"}


class StubAgent:
    """A v0.3 JSON-RPC agent whose card the test writes; it records what it was sent."""

    def __init__(self) -> None:
        self.card: dict[str, Any] = {}
        self.seen: list[dict[str, str]] = []
        self.url = ""

    async def card_handler(self, request: web.Request) -> web.Response:
        return web.json_response(self.card)

    async def rpc(self, request: web.Request) -> web.Response:
        self.seen.append({k.lower(): v for k, v in request.headers.items()})
        body = await request.json()
        reply: dict[str, Any] = {"kind": "message", "messageId": "r", "role": "agent",
                                 "parts": [{"kind": "text", "text": "stub"}]}
        if body["method"] == "agent/getAuthenticatedExtendedCard":
            reply = {**self.card, "skills": [{"id": "private", "name": "p", "description": "d",
                                             "tags": []}]}
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": reply},
                                 headers={"X-A2A-Extensions": "urn:a"})


@pytest.fixture
async def stub() -> AsyncIterator[StubAgent]:
    agent = StubAgent()
    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", agent.card_handler)
    app.router.add_post("/", agent.rpc)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    agent.url = f"http://127.0.0.1:{port}/"
    agent.card = {"protocolVersion": "0.3.0", "name": "stub", "description": "d",
                  "url": agent.url, "version": "1", "capabilities": {"streaming": True},
                  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                  "skills": [], "signatures": [{"protected": "x", "signature": "y"}]}
    yield agent
    await runner.cleanup()


async def get_json(http: aiohttp.ClientSession, url: str,
                   headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    async with http.get(url, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None), resp.headers


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                    "params": params}, headers=headers) as resp:
        return await resp.json()  # type: ignore[no-any-return]


HELLO_V10 = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
HELLO_V03 = {"message": {"kind": "message", "messageId": "m", "role": "user",
                         "parts": [{"kind": "text", "text": "hi"}]}}


async def test_served_card_is_a_union_pointing_at_the_gateway(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, demo_agent: str) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)})
    status, card, headers = await get_json(http, gw + "/.well-known/agent-card.json")
    assert status == 200 and headers["Vary"] == "A2A-Version, Host"
    # Both generations' fields side by side (reference §4.6).
    assert card["protocolVersion"] == "0.3.0" and card["url"] == gw + "/"
    bindings = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert bindings == {("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"),
                        ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")}
    assert demo_agent.rstrip("/") not in json.dumps(card)  # never the internal address
    assert card["capabilities"]["extendedAgentCard"] is True
    assert card["supportsAuthenticatedExtendedCard"] is True
    _, only10, _ = await get_json(http, gw + "/.well-known/agent-card.json", V10)
    assert "url" not in only10 and "supportedInterfaces" in only10
    _, only03, _ = await get_json(http, gw + "/.well-known/agent-card.json?A2A-Version=0.3")
    assert "supportedInterfaces" not in only03 and only03["url"] == gw + "/"


async def test_per_tenant_card_and_forwarded_headers(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, demo_agent: str) -> None:
    fwd = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example.com",
           "X-Forwarded-Prefix": "/a2a"}
    # X-Forwarded-* only from a trusted proxy (here: this test, on 127.0.0.1).
    gw = await make_gateway({"demo": v03(demo_agent)}, trusted_proxies=["127.0.0.0/8"])
    _, card, headers = await get_json(http, gw + "/demo/.well-known/agent-card.json", fwd)
    urls = {i["url"] for i in card["supportedInterfaces"]}
    assert urls == {"https://agents.example.com/a2a/demo/", "https://agents.example.com/a2a/demo"}
    assert headers["Vary"] == ("A2A-Version, X-Forwarded-Proto, X-Forwarded-Host, "
                               "X-Forwarded-Prefix, Host")
    untrusted = await make_gateway({"demo": v03(demo_agent)})
    _, card, _ = await get_json(http, untrusted + "/demo/.well-known/agent-card.json", fwd)
    assert {i["url"] for i in card["supportedInterfaces"]} == {untrusted + "/demo/",
                                                               untrusted + "/demo"}
    status, body, _ = await get_json(http, gw + "/nope/.well-known/agent-card.json")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
    configured = await make_gateway({"demo": v03(demo_agent)},
                                    public_url="https://public.example")
    _, card, _ = await get_json(http, configured + "/.well-known/agent-card.json")
    assert card["url"] == "https://public.example/"


async def test_backend_signatures_dropped_and_gateway_resigns(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, stub: StubAgent,
        tmp_path: Path) -> None:
    gw = await make_gateway({"s": v03(stub.url)})
    _, card, _ = await get_json(http, gw + "/.well-known/agent-card.json")
    assert "signatures" not in card
    key = ec.generate_private_key(ec.SECP256R1())
    pem = tmp_path / "card.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    signed = await make_gateway({"s": v03(stub.url)}, public_url="https://agents.example",
                                card_signing={"key_file": str(pem), "kid": "gw-1"})
    _, card, _ = await get_json(http, signed + "/.well-known/agent-card.json", V10)
    assert verify(card, key.public_key())
    card["name"] = "tampered"
    assert not verify(card, key.public_key())


async def test_extended_card_lists_gateway_interfaces(http: aiohttp.ClientSession,
                                                      make_gateway: MakeGateway,
                                                      demo_agent: str) -> None:
    gw = await make_gateway({"demo": v03(demo_agent)})
    status, card, _ = await get_json(http, gw + "/extendedAgentCard", V10)
    assert status == 200 and "secret-skill" in [s["id"] for s in card["skills"]]
    assert all(i["url"].startswith(gw) for i in card["supportedInterfaces"])
    reply = await rpc(http, gw + "/", "agent/getAuthenticatedExtendedCard", {})
    assert reply["result"]["url"].startswith(gw)
    status, card, _ = await get_json(http, gw + "/v1/card")
    assert status == 200 and card["url"].startswith(gw)
    # A v0.3 card cannot say which interface speaks which version: v0.3 clients get the
    # v0.3 interfaces once each, like the public v0.3 card, not every entry of both.
    _, public, _ = await get_json(http, gw + "/.well-known/agent-card.json",
                                  {"A2A-Version": "0.3"})
    for extended in (reply["result"], card):
        assert extended["additionalInterfaces"] == public["additionalInterfaces"]


async def test_capability_prechecks(http: aiohttp.ClientSession, make_gateway: MakeGateway,
                                    stub: StubAgent) -> None:
    stub.card["capabilities"] = {"streaming": False, "pushNotifications": False}
    gw = await make_gateway({"s": v03(stub.url)}) + "/"
    async with http.post(gw, json={"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                                   "params": HELLO_V10}, headers=V10) as resp:
        reply = await resp.json()
    assert reply["error"]["code"] == -32004
    reply = await rpc(http, gw, "tasks/pushNotificationConfig/get", {"id": "t"})
    assert reply["error"]["code"] == -32003
    reply = await rpc(http, gw, "GetExtendedAgentCard", {}, V10)
    assert reply["error"]["code"] == -32004
    assert stub.seen == []  # refused before the backend was called


async def test_i7_extensions(http: aiohttp.ClientSession, make_gateway: MakeGateway,
                             stub: StubAgent) -> None:
    stub.card["capabilities"]["extensions"] = [{"uri": "urn:a", "required": True},
                                               {"uri": "urn:b"}]
    gw = await make_gateway({"s": v03(stub.url)}) + "/"
    reply = await rpc(http, gw, "SendMessage", HELLO_V10, V10)
    assert reply["error"]["code"] == -32008
    assert reply["error"]["data"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    async with http.post(gw, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                   "params": HELLO_V10},
                         headers={**V10, "A2A-Extensions": "urn:a, urn:b"}) as resp:
        assert "result" in await resp.json()
        assert resp.headers["A2A-Extensions"] == "urn:a"  # echoed in the v1.0 name
    assert stub.seen[-1]["x-a2a-extensions"] == "urn:a,urn:b"


async def test_i3_i4_i5_i6_version_negotiation(http: aiohttp.ClientSession,
                                               make_gateway: MakeGateway,
                                               demo_agent: str) -> None:
    only10 = await make_gateway({"demo": v03(demo_agent)}, versions=["1.0"]) + "/"
    reply = await rpc(http, only10, "message/send", HELLO_V03)  # I3: no header = 0.3
    assert reply["error"]["code"] == -32009
    assert reply["error"]["message"].endswith("Supported: 1.0")
    assert "result" in await rpc(http, only10, "SendMessage", HELLO_V10, V10)  # I4
    reply = await rpc(http, only10, "SendMessage", HELLO_V10, {"A2A-Version": "9.9"})
    assert reply["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    # I5: 1.0.1 is read as 1.0 (patch numbers take no part in negotiation).
    assert "result" in await rpc(http, only10, "SendMessage", HELLO_V10,
                                 {"A2A-Version": "1.0.1"})
    # I6: the lowercase spelling gRPC uses works as an HTTP header too.
    assert "result" in await rpc(http, only10, "SendMessage", HELLO_V10, {"a2a-version": "1.0"})
    status, body, _ = await get_json(http, only10 + "v1/tasks/x")
    # A v0.3 REST route answers in the v0.3 REST shape.
    assert status == 400 and body["message"].startswith("Protocol version 0.3 is not supported")


async def test_discovery_from_card(http: aiohttp.ClientSession, make_gateway: MakeGateway,
                                   demo_agent: str) -> None:
    gw = await make_gateway({"d": {"backend": {"card": demo_agent + ".well-known/agent-card.json"}}})
    reply = await rpc(http, gw + "/", "SendMessage", HELLO_V10, V10)
    assert reply["result"]["message"]["parts"] == [{"text": "echo: hi"}]


async def test_i9_i10_interface_choice(http: aiohttp.ClientSession, make_gateway: MakeGateway,
                                       stub: StubAgent, demo_agent: str) -> None:
    inner = await make_gateway({"demo": v03(demo_agent)})
    dead = f"http://127.0.0.1:{free_port()}"
    stub.card = {"name": "multi", "description": "d", "version": "1", "capabilities": {},
                 "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
                 "supportedInterfaces": [
                     {"url": dead + "/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                     {"url": inner, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                     {"url": inner + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
    card = stub.url + ".well-known/agent-card.json"
    # I9: a gateway allowed only HTTP+JSON takes the entry it supports.
    rest_only = await make_gateway({"d": {"backend": {
        "card": card, "discovery": {"bindings": ["HTTP+JSON"]}}}})
    reply = await rpc(http, rest_only + "/", "SendMessage", HELLO_V10, V10)
    assert reply["result"]["message"]["parts"] == [{"text": "echo: hi"}]
    # I10: two JSON-RPC entries: the one of the preferred version is called.
    prefer10 = await make_gateway({"d": {"backend": {
        "card": card, "discovery": {"bindings": ["JSONRPC"], "prefer_version": "1.0"}}}})
    assert "result" in await rpc(http, prefer10 + "/", "SendMessage", HELLO_V10, V10)
    prefer03 = await make_gateway({"d": {"backend": {
        "card": card, "discovery": {"bindings": ["JSONRPC"], "prefer_version": "0.3"}}}})
    reply = await rpc(http, prefer03 + "/", "SendMessage", HELLO_V10, V10)
    assert reply["error"]["data"][0]["reason"] == "BACKEND_UNAVAILABLE"
    # The caller learns which tenant failed, never the backend's address (that is logged).
    assert "tenant d" in reply["error"]["message"] and dead not in reply["error"]["message"]


@pytest.mark.parametrize("binding", ["JSONRPC-1.0", "JSONRPC-0.3", "REST-1.0", "REST-0.3"])
async def test_extended_card_forwards_the_callers_credentials(
        http: aiohttp.ClientSession, make_gateway: MakeGateway, stub: StubAgent,
        binding: str) -> None:
    stub.card["supportsAuthenticatedExtendedCard"] = True
    gw = await make_gateway({"s": v03(stub.url)})
    auth = {"Authorization": "Bearer caller-token"}
    if binding == "JSONRPC-1.0":
        card = (await rpc(http, gw + "/", "GetExtendedAgentCard", {}, {**V10, **auth}))["result"]
    elif binding == "JSONRPC-0.3":
        card = (await rpc(http, gw + "/", "agent/getAuthenticatedExtendedCard", {}, auth))["result"]
    elif binding == "REST-1.0":
        _, card, _ = await get_json(http, gw + "/extendedAgentCard", {**V10, **auth})
    else:
        _, card, _ = await get_json(http, gw + "/v1/card", auth)
    assert [s["id"] for s in card["skills"]] == ["private"]
    assert stub.seen[-1]["authorization"] == "Bearer caller-token"
    assert stub.url.rstrip("/") not in json.dumps(card)
