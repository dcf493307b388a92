"""What the gateway says about its security: the served cards name its schemes in both
versions' shapes, the extended card needs an authenticated caller, and the admin
endpoints move to their own listener or ask for a credential (/healthz never does)."""

from __future__ import annotations

import aiohttp

from tests.security.security_support import V10, keys, post, sha
from tests.support.helpers import MakeGateway, free_port

KEY = "card-key-0123456789"
# The push relay's dead letters (gateway/server/admin_relay.py): an admin endpoint too.
DEAD_LETTERS = "/_admin/relay/dead-letters?tenant=t"
# Migration mode's report (gateway/server/admin_migration.py): one too.
MIGRATION = "/_admin/migration"


async def test_cards_name_the_gateways_schemes_in_both_shapes(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"},
                                   "auth": {"api_keys": keys(svc=KEY), "required": True}}})
    async with aiohttp.ClientSession() as http:
        async with http.get(gw + "/t/.well-known/agent-card.json", headers=V10) as resp:
            v10 = await resp.json()
        async with http.get(gw + "/t/.well-known/agent-card.json",
                            headers={"A2A-Version": "0.3"}) as resp:
            v03 = await resp.json()
    assert v10["securitySchemes"] == {
        "apiKey": {"apiKeySecurityScheme": {
            "location": "header", "name": "x-api-key",
            "description": "An API key issued by the gateway's operator"}},
        "bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "description": "An API key as a bearer token"}}}
    assert v10["securityRequirements"] == [{"schemes": {"apiKey": {"list": []}}},
                                           {"schemes": {"bearer": {"list": []}}}]
    assert v03["securitySchemes"]["apiKey"] == {
        "type": "apiKey", "in": "header", "name": "x-api-key",
        "description": "An API key issued by the gateway's operator"}
    assert v03["securitySchemes"]["bearer"]["type"] == "http"
    assert v03["security"] == [{"apiKey": []}, {"bearer": []}]


async def test_the_extended_card_needs_an_authenticated_caller(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    # Anonymous calls are allowed here, but not the extended card.
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"},
                                   "auth": {"api_keys": keys(svc=KEY)}}})
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetExtendedAgentCard", "params": {}}
    async with aiohttp.ClientSession() as http:
        status, headers, refused = await post(http, gw + "/t", body, V10)
        assert status == 401 and refused["error"]["code"] == -32000
        assert "WWW-Authenticate" in headers
        status, _, card = await post(http, gw + "/t", body, {**V10, "X-API-Key": KEY})
    assert status == 200
    assert "extended-card" in str(card["result"]["skills"])
    assert card["result"]["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == \
        "x-api-key"


async def test_the_admin_listener_takes_metrics_and_readiness(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    admin = free_port()
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"}}},
                            listen_admin=f"127.0.0.1:{admin}")
    async with aiohttp.ClientSession() as http:
        for path, status in (("/healthz", 200), ("/metrics", 404), ("/readyz", 404),
                             (DEAD_LETTERS, 404), (MIGRATION, 404)):
            async with http.get(gw + path) as resp:
                assert resp.status == status, path
        for path in ("/healthz", "/metrics", "/readyz", DEAD_LETTERS, MIGRATION):
            async with http.get(f"http://127.0.0.1:{admin}{path}") as resp:
                assert resp.status == 200, path
        async with http.get(f"http://127.0.0.1:{admin}/metrics") as resp:
            assert "a2a_gateway_calls_total" in await resp.text()
        # Nothing but the admin endpoints there.
        async with http.post(f"http://127.0.0.1:{admin}/t", json={}) as resp:
            assert resp.status == 404


async def test_admin_endpoints_on_the_main_listener_need_a_credential(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"}}},
                            auth={"api_keys": keys(ops=KEY)})
    async with aiohttp.ClientSession() as http:
        async with http.get(gw + "/healthz") as resp:
            assert resp.status == 200
        for path in ("/metrics", "/readyz", DEAD_LETTERS, MIGRATION):
            async with http.get(gw + path) as resp:
                assert resp.status == 401 and "WWW-Authenticate" in resp.headers
                body = await resp.json()
                assert body["error"]["status"] == "UNAUTHENTICATED"
                assert body["error"]["details"][0]["reason"] == "UNAUTHENTICATED"
            async with http.get(gw + path, headers={"X-API-Key": "wrong"}) as resp:
                assert resp.status == 401
            async with http.get(gw + path, headers={"X-API-Key": KEY}) as resp:
                assert resp.status == 200


async def test_admin_endpoints_refuse_a_credential_bound_to_a_tenant(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    # ops: a gateway-wide key bound to no tenant; billing-app: a gateway-wide key bound to
    # tenant a; bob: tenant b's own key (good for b only).
    admin = free_port()
    gateway_keys = {"keys": [{"principal": "ops", "sha256": sha(KEY)},
                             {"principal": "billing-app", "sha256": sha("bound-0123456789"),
                              "tenants": ["a"]}]}
    tenants = {"a": {"backend": {"url": demo_agent, "version": "0.3"}},
               "b": {"backend": {"url": demo_agent, "version": "0.3"},
                     "auth": {"api_keys": keys(bob="bob-key-0123456789")}}}
    gw = await make_gateway(tenants, auth={"api_keys": gateway_keys})
    behind = await make_gateway(tenants, auth={"api_keys": gateway_keys},
                                listen_admin=f"127.0.0.1:{admin}")
    async with aiohttp.ClientSession() as http:
        for path in ("/metrics", "/readyz", DEAD_LETTERS, MIGRATION):
            for key in ("bound-0123456789", "bob-key-0123456789"):
                async with http.get(gw + path, headers={"X-API-Key": key}) as resp:
                    body = await resp.json()
                    assert resp.status == (403 if key.startswith("bound") else 401), key
                    assert "a2a_gateway_calls_total" not in str(body)
            async with http.get(gw + path, headers={"X-API-Key": KEY}) as resp:
                assert resp.status == 200, path
            # The admin listener: for the cluster's network, open; the main one has none.
            async with http.get(behind + path, headers={"X-API-Key": KEY}) as resp:
                assert resp.status == 404, path
            async with http.get(f"http://127.0.0.1:{admin}{path}") as resp:
                assert resp.status == 200, path
        async with http.get(gw + "/metrics", headers={"X-API-Key": "bound-0123456789"}) \
                as resp:
            refusal = await resp.json()
    assert refusal["error"]["status"] == "PERMISSION_DENIED"
    assert "bound to tenants" in refusal["error"]["message"]


async def test_admin_endpoints_with_only_tenant_credentials_are_on_the_admin_listener(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    gw = await make_gateway({"b": {"backend": {"url": demo_agent, "version": "0.3"},
                                   "auth": {"api_keys": keys(bob=KEY)}}})
    async with aiohttp.ClientSession() as http:
        for path in ("/metrics", "/readyz", DEAD_LETTERS, MIGRATION):
            for headers in ({}, {"X-API-Key": KEY}):
                async with http.get(gw + path, headers=headers) as resp:
                    assert resp.status == 403, (path, headers)
                    assert "listen.admin" in (await resp.json())["error"]["message"]
        async with http.get(gw + "/healthz") as resp:
            assert resp.status == 200
