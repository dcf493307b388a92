"""Relay keys and seals: the client's webhook, sealed into the relay URL with AES-GCM.

The relay URL is ``<base>/_relay/<seal>``. The seal holds the client's URL, token,
authentication, the tenant and task it was registered for, the versions, and a random
token the backend must send back; so the gateway keeps no state and any replica sharing
the keys can deliver. Seal with the first key, open with any (key rotation).

A seal is opened in two places only: the relay endpoint (a backend's notification), and
answers about the very tenant and task it was made for (README "Push notifications").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from gateway.config.models import ConfigError, GatewayConfig, PushRelayConfig
from translators.webhooks import RelayTarget

RELAY_PATH = "/_relay/"
_FORMAT = 1  # first byte of a seal
_AAD = b"a2a-gateway push relay v1"
_KEY_ID_LEN = 4
_NONCE_LEN = 12

# One key per process when none is configured, so a config reload keeps the seals
# this process handed out working. Workers get their supervisor's (GENERATED_KEY_ENV), so
# that any worker opens what another sealed; configured keys keep their precedence.
_generated_key: bytes | None = None
GENERATED_KEY_ENV = "A2A_GATEWAY_WORKERS_GENERATED_RELAY_KEY"


class SealError(Exception):
    """A relay seal that cannot be used; the message says why, never what is inside."""


def decode_key(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    if len(raw) not in (16, 24, 32):
        raise ValueError("not 16, 24 or 32 bytes")
    return raw


def load_keys(settings: PushRelayConfig,
              environ: Mapping[str, str] | None = None) -> tuple[list[bytes], str]:
    """The relay keys, newest first, and where they came from: the environment variable
    named by `keys_env` (comma-separated) wins over `keys`; with neither, one key is
    made for this process (seals then die with it and replicas cannot share them)."""
    environ = os.environ if environ is None else environ
    from_env = [k for k in environ.get(settings.keys_env, "").replace(" ", ",").split(",")
                if k.strip()]
    texts, source = (from_env, f"env {settings.keys_env}") if from_env else (
        settings.keys, "config push_relay.keys")
    if texts:
        try:
            return [decode_key(k) for k in texts], source
        except (binascii.Error, ValueError):
            raise ConfigError(f"{source}: every relay key must be 16, 24 or 32 bytes in "
                              f"base64 (make one with: a2a-gateway keygen relay)") from None
    return [generated_key(environ)], "generated"


def generated_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The key this process seals with when none is configured: its supervisor's when it
    is a worker, else one made now and kept for the life of the process."""
    global _generated_key
    if _generated_key is None:
        inherited = (os.environ if environ is None else environ).get(GENERATED_KEY_ENV)
        _generated_key = decode_key(inherited) if inherited else \
            AESGCM.generate_key(bit_length=256)
    return _generated_key


def export_generated_key() -> str:
    """This process's generated key, as base64 for GENERATED_KEY_ENV."""
    return base64.urlsafe_b64encode(generated_key()).decode()


class Sealer:
    """AES-GCM seals of relay targets, with their age checked on opening."""

    def __init__(self, keys: list[bytes], max_age: float = 0) -> None:
        if not keys:
            raise ValueError("at least one key")
        self._keys = [(hashlib.sha256(k).digest()[:_KEY_ID_LEN], AESGCM(k)) for k in keys]
        self.max_age = max_age

    def seal(self, target: RelayTarget) -> str:
        key_id, aead = self._keys[0]
        nonce = os.urandom(_NONCE_LEN)
        plain = json.dumps(target.to_payload(), separators=(",", ":"),
                           ensure_ascii=False).encode()
        blob = bytes([_FORMAT]) + key_id + nonce + aead.encrypt(nonce, plain, _AAD)
        return base64.urlsafe_b64encode(blob).rstrip(b"=").decode("ascii")

    def _payload(self, sealed: str) -> dict[str, Any]:
        try:
            blob = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
        except (binascii.Error, ValueError):
            raise SealError("the relay URL is malformed") from None
        head = 1 + _KEY_ID_LEN + _NONCE_LEN
        if len(blob) <= head + 16 or blob[0] != _FORMAT:
            raise SealError("the relay URL is malformed")
        key_id, nonce, box = blob[1:1 + _KEY_ID_LEN], blob[1 + _KEY_ID_LEN:head], blob[head:]
        candidates = [aead for kid, aead in self._keys if kid == key_id]
        if not candidates:
            raise SealError("the relay URL was sealed with a key this gateway does not have "
                            "(rotated out, or another gateway's)")
        for aead in candidates:
            try:
                plain = aead.decrypt(nonce, box, _AAD)
            except InvalidTag:
                continue
            try:
                data = json.loads(plain)
            except ValueError:
                break
            if isinstance(data, dict):
                return data
            break
        raise SealError("the relay URL's seal does not verify (tampered with)")

    def open(self, sealed: str, *, check_age: bool) -> RelayTarget:
        try:
            target = RelayTarget.from_payload(self._payload(sealed))
        except ValueError as exc:
            raise SealError(f"the relay URL's payload is not understood ({exc})") from None
        age = time.time() - target.issued_at
        if check_age and self.max_age and age > self.max_age:
            raise SealError(f"the relay URL expired (issued {int(age)} s ago, "
                            f"push_relay.seal_max_age is {self.max_age:g} s)")
        return target

    def opens(self, sealed: str) -> bool:
        """Whether this seal is one of ours (whatever its age)."""
        try:
            self._payload(sealed)
        except SealError:
            return False
        return True


def seal_id(sealed: str) -> str:
    """A short stable name for a seal (state keys, logs), which reveals nothing of it."""
    return hashlib.sha256(sealed.encode()).hexdigest()[:32]


def relay_base(config: GatewayConfig) -> str:
    """Where backends reach the relay: push_relay.public_url, else public_url, else the
    HTTP listener (a wildcard listener is reached on 127.0.0.1)."""
    base = config.push_relay.public_url or config.public_url
    if not base:
        host, _, port = config.listen.http.rpartition(":")
        host = host.strip("[]")
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    return base.rstrip("/") + RELAY_PATH


def sealed_part(url: str) -> str | None:
    """The seal in a relay URL (``.../_relay/<seal>``), or None for any other URL."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    at = path.rfind(RELAY_PATH)
    if at < 0:
        return None
    sealed = path[at + len(RELAY_PATH):]
    return sealed if sealed and "/" not in sealed else None
