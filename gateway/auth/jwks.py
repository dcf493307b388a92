"""The JWT signing keys of an issuer: a JWK set from a URL (cached for `jwks_ttl`,
fetched again when a token names a key id the set lacks — key rotation — at most once
per `jwks_refresh_min_interval`) or from a file (re-read when it changes)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from jwt import PyJWK
from jwt.exceptions import InvalidKeyError, PyJWKError

from gateway.config.auth import JwtConfig
from translators.errors import A2AError, a2a_error

log = structlog.get_logger("a2a_gateway.auth")

MAX_JWKS_BYTES = 1024 * 1024


class JwksError(Exception):
    """A JWK set that cannot be fetched or read (the detail is for the log)."""


@dataclass(frozen=True)
class SigningKey:
    jwk: PyJWK
    kty: str
    alg: str | None  # the `alg` the JWK names, if any
    crv: str | None


def parse_jwks(data: Any) -> dict[str | None, SigningKey]:
    """Public signing keys by key id. Keys PyJWT cannot use, keys for encryption and
    symmetric (`oct`) keys are skipped; a set with no usable key is an error."""
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise JwksError("not a JWK set (no `keys` list)")
    out: dict[str | None, SigningKey] = {}
    for raw in data["keys"]:
        if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
            continue
        kty = raw.get("kty")
        if kty not in ("RSA", "EC", "OKP") or "d" in raw:  # public keys only
            continue
        try:
            jwk = PyJWK(raw)
        except (PyJWKError, InvalidKeyError, ValueError, TypeError):
            continue
        alg, crv = raw.get("alg"), raw.get("crv")
        out[jwk.key_id] = SigningKey(jwk, kty, alg if isinstance(alg, str) else None,
                                     crv if isinstance(crv, str) else None)
    if not out:
        raise JwksError("the set holds no usable public signing key")
    return out


def read_jwks_file(path: str) -> dict[str | None, SigningKey]:
    """The keys of a JWK set file (`jwt.jwks_file`); JwksError when it cannot be used.
    Preflight reads the file with this too, so it cannot disagree with serving."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(MAX_JWKS_BYTES + 1))
    except OSError as exc:
        raise JwksError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:  # not UTF-8, not JSON, or cut at the size bound
        raise JwksError(f"{path} is not a JSON JWK set") from None
    return parse_jwks(data)


async def fetch_jwks(url: str, timeout: float) -> dict[str | None, SigningKey]:
    """The keys of the JWK set at ``url`` (`jwt.jwks_url`); JwksError when it cannot be
    fetched or used. `check-config --connect` fetches it with this too."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) \
                as session, session.get(url, allow_redirects=False,
                                        headers={"accept": "application/json"}) as resp:
            if resp.status != 200:
                raise JwksError(f"HTTP {resp.status}")
            body = await resp.content.read(MAX_JWKS_BYTES + 1)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise JwksError(str(exc) or type(exc).__name__) from None
    if len(body) > MAX_JWKS_BYTES:
        raise JwksError("larger than 1 MiB")
    try:
        return parse_jwks(json.loads(body))
    except ValueError as exc:
        raise JwksError(f"not JSON: {exc}") from None


class JwksSource:
    """Where one JWT config's keys come from; ``clock`` is replaceable (tests)."""

    def __init__(self, config: JwtConfig, clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self.config = config
        self._clock = clock
        self._keys: dict[str | None, SigningKey] = {}
        self._fetched_at: float | None = None
        self._file_mtime: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0  # how many times the set was fetched (tests, metrics)

    async def prime(self) -> None:
        """Load the keys at start: a JWK set file that cannot be read is a config error
        (JwksError); an issuer that cannot be reached yet is only logged (tokens are
        refused as unavailable until it can be)."""
        try:
            await self._refresh(force=True)
        except A2AError:
            if self.config.jwks_file is not None:
                raise JwksError(f"cannot use the JWK set file {self.config.jwks_file}") \
                    from None

    async def key_for(self, kid: str | None) -> SigningKey | None:
        """The key ``kid`` names (a token without a kid: the set's only key)."""
        if self._stale():
            await self._refresh(force=False)
        key = self._pick(kid)
        if key is None and self._may_refetch():
            await self._refresh(force=True)
            key = self._pick(kid)
        return key

    def _pick(self, kid: str | None) -> SigningKey | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _stale(self) -> bool:
        if self.config.jwks_file is not None:
            return self._file_changed()
        return (self._fetched_at is None
                or self._clock() - self._fetched_at >= self.config.jwks_ttl)

    def _may_refetch(self) -> bool:
        if self.config.jwks_file is not None:
            return False
        return (self._fetched_at is None or self._clock() - self._fetched_at
                >= self.config.jwks_refresh_min_interval)

    def _file_changed(self) -> bool:
        try:
            mtime = os.stat(self.config.jwks_file or "").st_mtime
        except OSError:
            return self._file_mtime is None
        return mtime != self._file_mtime

    async def _refresh(self, force: bool) -> None:
        before = self._fetched_at
        async with self._lock:
            if self._fetched_at != before:
                return  # another caller refreshed while this one waited (single flight)
            if not force and not self._stale():
                return
            try:
                keys = (self._read_file() if self.config.jwks_file is not None
                        else await self._fetch_url())
            except JwksError as exc:
                log.warning("jwks unavailable", source=self.config.jwks_url
                            or self.config.jwks_file, detail=str(exc))
                self._fetched_at = self._clock()  # not again before the refresh interval
                if not self._keys:
                    raise a2a_error("BackendUnavailableError", "the signing keys of the "
                                    "token issuer are unavailable; retry later") from None
                return  # keep using the keys known
            self._keys = keys
            self._fetched_at = self._clock()

    def _read_file(self) -> dict[str | None, SigningKey]:
        path = self.config.jwks_file or ""
        try:
            self._file_mtime = os.stat(path).st_mtime
        except OSError as exc:
            raise JwksError(f"cannot read {path}: {exc.strerror or exc}") from None
        return read_jwks_file(path)

    async def _fetch_url(self) -> dict[str | None, SigningKey]:
        self.fetches += 1
        return await fetch_jwks(self.config.jwks_url or "", self.config.jwks_timeout)
