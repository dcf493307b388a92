"""What credential reaches the backend: forward, drop, replace (static bearer / API key,
or an OAuth2 client-credentials token fetched from a local token server, cached, refreshed
and fetched once for many concurrent calls)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.auth.backend_creds import BackendCredentials, OAuthTokens
from gateway.config.auth import BackendAuthConfig, OAuthClientConfig
from tests.support.helpers import ManualClock, serving
from translators.errors import A2AError

CLIENT = {"authorization": "Bearer client-token", "x-request-id": "r1"}


def creds(consumed: frozenset[str] = frozenset(), **cfg: Any) -> BackendCredentials:
    config = BackendAuthConfig.model_validate(cfg) if cfg else None
    return BackendCredentials(config, consumed, "t")


async def test_default_forwards_without_gateway_auth_and_drops_with_it() -> None:
    assert await creds().headers(CLIENT) == CLIENT
    assert creds().mode == "forward"
    dropped = creds(frozenset({"authorization"}))
    assert dropped.mode == "drop"
    assert await dropped.headers(CLIENT) == {"x-request-id": "r1"}


async def test_forward_keeps_what_the_gateway_did_not_consume() -> None:
    consumed = frozenset({"x-api-key"})
    headers = {**CLIENT, "x-api-key": "gateway-key"}
    assert await creds(consumed, mode="forward").headers(headers) == CLIENT
    both = creds(frozenset({"authorization"}), mode="forward", forward_consumed=True)
    assert await both.headers(CLIENT) == CLIENT


async def test_drop_and_static_replacements(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    headers = {**CLIENT, "x-api-key": "k", "proxy-authorization": "p"}
    assert await creds(mode="drop").headers(headers) == {"x-request-id": "r1"}
    (tmp_path / "token").write_text("backend-token\n")
    bearer = creds(mode="replace", bearer={"file": str(tmp_path / "token")})
    assert await bearer.headers(headers) == {"x-request-id": "r1",
                                             "authorization": "Bearer backend-token"}
    monkeypatch.setenv("BACKEND_KEY", "bk-1")
    key = creds(mode="replace", api_key={"env": "BACKEND_KEY"}, api_key_header="X-Backend-Key")
    assert await key.headers(headers) == {"x-request-id": "r1", "x-backend-key": "bk-1"}


@dataclass
class TokenServer:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    expires_in: int = 3600
    status: int = 200
    delay: float = 0.0


@pytest.fixture
async def token_server() -> AsyncIterator[TokenServer]:
    server = TokenServer()

    async def issue(request: web.Request) -> web.Response:
        form = dict(await request.post())
        server.requests.append({"form": form, "auth": request.headers.get("Authorization")})
        await asyncio.sleep(server.delay)
        if server.status != 200:
            return web.json_response({"error": "invalid_client"}, status=server.status)
        return web.json_response({"access_token": f"tok-{len(server.requests)}",
                                  "token_type": "Bearer", "expires_in": server.expires_in})

    app = web.Application()
    app.router.add_post("/token", issue)
    async with serving(app) as base:
        server.url = f"{base}/token"
        yield server


def oauth(server: TokenServer, monkeypatch: pytest.MonkeyPatch, **over: Any,
          ) -> OAuthClientConfig:
    monkeypatch.setenv("OAUTH_SECRET", "s3cret")
    return OAuthClientConfig.model_validate({
        "token_url": server.url, "client_id": "gw", "client_secret": {"env": "OAUTH_SECRET"},
        "scope": "agents.call", "refresh_before": 60, **over})


async def test_client_credentials_cached_single_flight_and_refreshed(
        token_server: TokenServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock(10.0)
    token_server.delay = 0.05
    tokens = OAuthTokens(oauth(token_server, monkeypatch), clock)
    got = await asyncio.gather(*(tokens.token("t") for _ in range(20)))
    assert set(got) == {"tok-1"} and len(token_server.requests) == 1
    first = token_server.requests[0]
    assert first["form"] == {"grant_type": "client_credentials", "scope": "agents.call"}
    assert first["auth"] == "Basic " + base64.b64encode(b"gw:s3cret").decode()
    clock.now += 3600 - 61  # still fresh: cached
    assert await tokens.token() == "tok-1"
    clock.now += 2  # within refresh_before of its expiry: fetched again
    assert await tokens.token() == "tok-2"
    tokens.refused("tok-1")  # an old token refused: the current one stays
    assert await tokens.token() == "tok-2"
    tokens.refused("tok-2")  # the backend refused it: the next call fetches another
    assert await tokens.token() == "tok-3"


async def test_client_secret_post_and_replace_mode(token_server: TokenServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = oauth(token_server, monkeypatch, auth_method="client_secret_post", scope=None,
                audience="https://backend")
    backend = BackendCredentials(BackendAuthConfig(mode="replace", oauth=cfg),
                                 frozenset({"authorization"}), "t")
    assert await backend.headers(CLIENT) == {"x-request-id": "r1",
                                             "authorization": "Bearer tok-1"}
    assert token_server.requests[0] == {"auth": None, "form": {
        "grant_type": "client_credentials", "audience": "https://backend",
        "client_id": "gw", "client_secret": "s3cret"}}


async def test_token_endpoint_failure_is_backend_unavailable(
        token_server: TokenServer, monkeypatch: pytest.MonkeyPatch) -> None:
    token_server.status = 401
    tokens = OAuthTokens(oauth(token_server, monkeypatch))
    with pytest.raises(A2AError) as caught:
        await tokens.token("t")
    err = caught.value
    assert err.kind.name == "BackendUnavailableError"
    assert "s3cret" not in err.message and "127.0.0.1" not in err.message
    token_server.status = 200
    assert await tokens.token("t") == "tok-2"  # a failure is not cached
