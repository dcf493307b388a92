"""What credential reaches the backend (`backend_auth`), observed at a recording agent:
forward, drop, replace (a static token from the environment, an OAuth client-credentials
token the gateway fetches once and reuses), and the default that never forwards a
credential the gateway consumed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.security.security_support import RecordingAgent, keys, post, rpc_send
from tests.support.helpers import MakeGateway, serving
from tests.support.waiting import wait_until

KEY = "caller-key-0123456789"


@pytest.fixture
async def token_endpoint() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def issue(request: web.Request) -> web.Response:
        seen.append({"form": dict(await request.post()),
                     "authorization": request.headers.get("Authorization")})
        return web.json_response({"access_token": f"oauth-{len(seen)}",
                                  "token_type": "Bearer", "expires_in": 3600})

    app = web.Application()
    app.router.add_post("/token", issue)
    async with serving(app) as base:
        yield base + "/token", seen


async def test_each_backend_auth_mode_is_what_the_backend_sees(
        make_gateway: MakeGateway, token_endpoint: tuple[str, list[dict[str, Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    token_url, token_calls = token_endpoint
    monkeypatch.setenv("BACKEND_TOKEN", "static-backend-token")
    monkeypatch.setenv("OAUTH_SECRET", "client-secret")
    agents = {name: RecordingAgent(name) for name in
              ("open", "default", "forward", "drop", "static", "oauth")}
    async with (agents["open"].running(), agents["default"].running(),
                agents["forward"].running(), agents["drop"].running(),
                agents["static"].running(), agents["oauth"].running()):
        def tenant(name: str, auth: dict[str, Any] | None) -> dict[str, Any]:
            entry: dict[str, Any] = {"backend": {"url": agents[name].url, "version": "0.3"}}
            if auth is not None:
                entry["auth"] = auth
            return entry

        checked = {"api_keys": keys(caller=KEY)}
        gw = await make_gateway({
            # No auth at all: the client's Authorization passes on, as before.
            "open": tenant("open", None),
            # The gateway checks the key: by default it does not pass it on.
            "default": tenant("default", checked),
            "forward": tenant("forward", {**checked, "backend_auth": {
                "mode": "forward", "forward_consumed": True}}),
            "drop": tenant("drop", {"backend_auth": {"mode": "drop"}}),
            "static": tenant("static", {**checked, "backend_auth": {
                "mode": "replace", "bearer": {"env": "BACKEND_TOKEN"}}}),
            "oauth": tenant("oauth", {**checked, "backend_auth": {"mode": "replace", "oauth": {
                "token_url": token_url, "client_id": "gw",
                "client_secret": {"env": "OAUTH_SECRET"}, "scope": "agent.call"}}}),
        }, forward_headers=["authorization", "x-api-key"])
        async with aiohttp.ClientSession() as http:
            for name in agents:
                for _ in range(2):
                    status, _, reply = await post(http, f"{gw}/{name}", rpc_send(),
                                                  {"Authorization": f"Bearer {KEY}"})
                    assert status == 200 and f"from {name}" in str(reply), reply
    seen = {name: agent.headers[-1] for name, agent in agents.items()}
    assert seen["open"]["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in seen["default"]
    assert seen["forward"]["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in seen["drop"]
    assert seen["static"]["authorization"] == "Bearer static-backend-token"
    assert seen["oauth"]["authorization"] == "Bearer oauth-1"
    assert agents["oauth"].headers[0]["authorization"] == "Bearer oauth-1"
    # One token fetched for both calls, with the client's credentials (Basic auth).
    assert len(token_calls) == 1
    assert token_calls[0]["form"] == {"grant_type": "client_credentials", "scope": "agent.call"}
    assert token_calls[0]["authorization"].startswith("Basic ")


async def test_a_token_the_backend_refuses_is_fetched_again(
        make_gateway: MakeGateway, token_endpoint: tuple[str, list[dict[str, Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A token revoked at the issuer (or a backend rotated to another issuer's keys) is
    refused by the backend with HTTP 401: the caller gets UnauthenticatedError once, and
    the next call goes with a new token instead of the cached one until it expires."""
    token_url, token_calls = token_endpoint
    monkeypatch.setenv("OAUTH_SECRET", "client-secret")
    agent = RecordingAgent("oauth", refuse={"Bearer oauth-1"})
    async with agent.running():
        gw = await make_gateway({"oauth": {
            "backend": {"url": agent.url, "version": "0.3"},
            "auth": {"api_keys": keys(caller=KEY), "backend_auth": {"mode": "replace", "oauth": {
                "token_url": token_url, "client_id": "gw",
                "client_secret": {"env": "OAUTH_SECRET"}}}}}})
        async with aiohttp.ClientSession() as http:
            status, _, refused = await post(http, f"{gw}/oauth", rpc_send(),
                                            {"Authorization": f"Bearer {KEY}"})
            assert status == 401, refused
            assert refused["error"]["message"].startswith("the backend refused")
            status, _, reply = await post(http, f"{gw}/oauth", rpc_send(),
                                          {"Authorization": f"Bearer {KEY}"})
            assert status == 200 and "from oauth" in str(reply), reply
    assert [h["authorization"] for h in agent.headers] == ["Bearer oauth-1", "Bearer oauth-2"]
    assert len(token_calls) == 2


async def test_a_cookie_a_backend_sets_never_reaches_it_again(make_gateway: MakeGateway) -> None:
    """The gateway keeps no cookie jar toward backends: a session cookie one caller's call
    got from a backend would otherwise ride along on every other caller's calls."""
    agent = RecordingAgent("jar", set_cookie="session=caller-one; Path=/")
    async with agent.running():
        # By a host name: aiohttp's cookie jar takes no cookie from an IP address.
        url = agent.url.replace("127.0.0.1", "localhost")
        gw = await make_gateway({"jar": {"backend": {"url": url, "version": "0.3"}}})
        for caller in ("one", "two"):
            async with aiohttp.ClientSession() as http:  # two callers, two sessions
                status, headers, reply = await post(http, f"{gw}/jar", rpc_send(text=caller))
                assert status == 200 and "from jar" in str(reply), reply
                assert "Set-Cookie" not in headers  # nor does it reach the caller
    assert [h.get("cookie") for h in agent.headers] == [None, None]


async def test_the_gateways_credential_for_the_primary_never_reaches_a_candidate(
        make_gateway: MakeGateway, monkeypatch: pytest.MonkeyPatch) -> None:
    # `backend_auth: replace` is the gateway's own credential for the tenant's backend:
    # in migration mode the candidate (perhaps another team's sandbox) got it too, on
    # the calls it served and on the shadow copies.
    monkeypatch.setenv("BACKEND_TOKEN", "static-backend-token")
    agents = {name: RecordingAgent(name) for name in
              ("primary", "cut-to", "shadowed", "copied-to")}
    async with (agents["primary"].running(), agents["cut-to"].running(),
                agents["shadowed"].running(), agents["copied-to"].running()):
        auth = {"api_keys": keys(caller=KEY), "backend_auth": {
            "mode": "replace", "bearer": {"env": "BACKEND_TOKEN"}}}

        def tenant(primary: str, candidate: str, **migration: Any) -> dict[str, Any]:
            return {"backend": {"url": agents[primary].url, "version": "0.3"}, "auth": auth,
                    "migration": {"candidate": {"url": agents[candidate].url,
                                                "version": "0.3"}, **migration}}

        gw = await make_gateway({
            "cut": tenant("primary", "cut-to", mode="cutover"),
            "shadow": tenant("shadowed", "copied-to", mode="shadow",
                             shadow={"operations": ["SendMessage"]}),
        })
        async with aiohttp.ClientSession() as http:
            for name, answered_by in (("cut", "cut-to"), ("shadow", "shadowed")):
                status, _, reply = await post(http, f"{gw}/{name}", rpc_send(),
                                              {"Authorization": f"Bearer {KEY}"})
                assert status == 200 and f"from {answered_by}" in str(reply), reply
        await wait_until(lambda: agents["copied-to"].headers, "the shadow copy arrived")
    assert agents["shadowed"].headers[-1]["authorization"] == "Bearer static-backend-token"
    for candidate in ("cut-to", "copied-to"):
        seen = agents[candidate].headers[-1]
        assert "authorization" not in seen and "x-api-key" not in seen, (candidate, seen)
    assert agents["primary"].headers == []  # cut over: the new conversation was not its
