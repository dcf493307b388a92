"""API keys: compared as SHA-256 digests in constant time, so neither the config nor the
process memory holds a key in plain once read, and timing says nothing about a key."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from gateway.auth.principal import Principal
from gateway.auth.secrets import read_secret
from gateway.config.auth import ApiKeyEntry, ApiKeysConfig


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key, as config stores it (`a2a-gateway hash-key`)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Key:
    digest: bytes
    principal: Principal


def _digest(entry: ApiKeyEntry) -> bytes:
    if entry.sha256 is not None:
        return bytes.fromhex(entry.sha256)
    plain = read_secret(entry.key_file, entry.key_env)
    return hashlib.sha256(plain.encode("utf-8")).digest()


class ApiKeys:
    """The keys of one auth config, and where a request carries one."""

    def __init__(self, config: ApiKeysConfig, bound_tenant: str | None = None) -> None:
        self.config = config
        self._schemes = {s.lower() for s in config.authorization_schemes}
        self._keys = []
        for entry in config.keys:
            tenants = (frozenset(entry.tenants) if entry.tenants is not None
                       else frozenset({bound_tenant}) if bound_tenant is not None else None)
            self._keys.append(_Key(_digest(entry), Principal(
                entry.principal, "api_key", frozenset(entry.scopes), tenants)))

    def presented(self, headers: dict[str, str]) -> tuple[str, str] | None:
        """(the header it came in, the key) when the request carries an API key."""
        header = self.config.header
        if header is not None and headers.get(header):
            return header, headers[header].strip()
        scheme, _, value = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() in self._schemes and value.strip():
            return "authorization", value.strip()
        return None

    def check(self, key: str) -> Principal | None:
        """The principal whose key this is. Every stored digest is compared (with
        hmac.compare_digest), whichever matches, so the time taken does not depend on
        which key matched or how much of it."""
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        found: Principal | None = None
        for stored in self._keys:
            if hmac.compare_digest(digest, stored.digest):
                found = stored.principal
        return found
