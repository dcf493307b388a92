"""What credential reaches a tenant's backend (`backend_auth`):

- `forward`: the client's credential headers pass on (those in `forward_headers`), except
  the ones the gateway consumed itself unless `forward_consumed` is set;
- `drop`: no credential passes on (the default when the gateway authenticates);
- `replace`: the gateway's own — a static bearer token or API key read at start from a
  file or environment variable, or an OAuth2 client-credentials token it fetches, caches
  until shortly before it expires, and refreshes (one fetch at a time).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import structlog

from gateway.auth.secrets import read_source
from gateway.config.auth import BackendAuthConfig, OAuthClientConfig
from translators.errors import a2a_error

log = structlog.get_logger("a2a_gateway.auth")

# Headers that carry a client's credential, whichever the gateway reads.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key"})
MAX_TOKEN_ANSWER = 64 * 1024


class OAuthTokens:
    """A client-credentials access token, fetched when needed and cached."""

    def __init__(self, config: OAuthClientConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._secret = read_source(config.client_secret)
        self._clock = clock
        self._token: str | None = None
        self._expires = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0

    def _fresh(self) -> str | None:
        return self._token if self._clock() < self._expires else None

    def refused(self, token: str, tenant: str | None = None) -> None:
        """The backend refused ``token``: unless another one replaced it meanwhile, it is
        forgotten, and the next call fetches another (a token revoked or rotated at the
        issuer would otherwise be sent until it expires)."""
        if token and token == self._token:
            self._token = None
            self._expires = 0.0
            log.warning("backend refused the gateway's token; the next call fetches another",
                        tenant=tenant, token_url=self.config.token_url)

    async def token(self, tenant: str | None = None) -> str:
        fresh = self._fresh()
        if fresh is not None:
            return fresh
        async with self._lock:  # one fetch at a time; the others wait for its token
            fresh = self._fresh()
            if fresh is not None:
                return fresh
            try:
                token, lifetime = await self._fetch()
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.warning("backend token fetch failed", tenant=tenant,
                            token_url=self.config.token_url, detail=str(exc)
                            or type(exc).__name__)
                raise a2a_error("BackendUnavailableError", "the backend's credential "
                                f"could not be obtained (tenant {tenant or '(default)'})",
                                tenant=tenant or "") from None
            self._token = token
            keep = max(lifetime - self.config.refresh_before, lifetime / 2)
            self._expires = self._clock() + keep
            return token

    async def _fetch(self) -> tuple[str, float]:
        cfg = self.config
        self.fetches += 1
        form = {"grant_type": "client_credentials"}
        if cfg.scope:
            form["scope"] = cfg.scope
        if cfg.audience:
            form["audience"] = cfg.audience
        headers = {"accept": "application/json"}
        if cfg.auth_method == "client_secret_basic":
            # RFC 6749 §2.3.1: both form-urlencoded, then HTTP Basic.
            pair = f"{quote(cfg.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form.update(client_id=cfg.client_id, client_secret=self._secret)
        timeout = aiohttp.ClientTimeout(total=cfg.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.post(
                cfg.token_url, data=form, allow_redirects=False, headers=headers) as resp:
            body = await resp.content.read(MAX_TOKEN_ANSWER)
            if resp.status != 200:
                raise ValueError(f"token endpoint answered HTTP {resp.status}")
        return _read_token(json.loads(body))


def _read_token(answer: Any) -> tuple[str, float]:
    if not isinstance(answer, dict):
        raise ValueError("token answer is not a JSON object")
    token = answer.get("access_token")
    if not isinstance(token, str) or not token:
        raise ValueError("token answer has no access_token")
    kind = answer.get("token_type", "Bearer")
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise ValueError("token answer is not a bearer token")
    expires_in = answer.get("expires_in", 300)
    if not isinstance(expires_in, int | float) or isinstance(expires_in, bool) \
            or expires_in <= 0:
        raise ValueError("token answer has an invalid expires_in")
    return token, float(expires_in)


class BackendCredentials:
    """One tenant's backend credential policy."""

    def __init__(self, config: BackendAuthConfig | None, consumed: frozenset[str],
                 tenant: str | None = None) -> None:
        """``consumed``: the header names the gateway's own authentication reads for this
        tenant (empty when it authenticates nobody)."""
        self.mode = config.mode if config is not None else ("drop" if consumed else "forward")
        self.config = config
        self.consumed = consumed
        self.tenant = tenant
        self._static: dict[str, str] = {}
        self.oauth: OAuthTokens | None = None
        if config is not None and config.mode == "replace":
            if config.bearer is not None:
                self._static = {"authorization": f"Bearer {read_source(config.bearer)}"}
            elif config.api_key is not None:
                self._static = {config.api_key_header: read_source(config.api_key)}
            elif config.oauth is not None:
                self.oauth = OAuthTokens(config.oauth)

    @property
    def own_headers(self) -> frozenset[str]:
        """The names of the headers that carry the gateway's own credential (`replace`)."""
        if self.mode != "replace":
            return frozenset()
        return frozenset(self._static) | ({"authorization"} if self.oauth else frozenset())

    def refused(self, sent: Mapping[str, str]) -> None:
        """The backend answered UnauthenticatedError to a call sent with ``sent``: an
        OAuth token in it is not used again."""
        if self.oauth is not None:
            value = sent.get("authorization", "")
            if value.startswith("Bearer "):
                self.oauth.refused(value[len("Bearer "):], self.tenant)

    async def headers(self, forwarded: Mapping[str, str]) -> dict[str, str]:
        """The headers to send the backend for one call, from those the client's request
        would forward (``CallContext.forward_headers``, lowercase names)."""
        out = {k.lower(): v for k, v in forwarded.items()}
        if self.mode == "forward":
            keep_consumed = self.config is not None and self.config.forward_consumed
            if not keep_consumed:
                for name in self.consumed:
                    out.pop(name, None)
            return out
        for name in CREDENTIAL_HEADERS | self.consumed:
            out.pop(name, None)
        if self.mode == "replace":
            out.update(self._static)
            if self.oauth is not None:
                out["authorization"] = f"Bearer {await self.oauth.token(self.tenant)}"
        return out
