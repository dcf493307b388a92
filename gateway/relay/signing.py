"""Standard Webhooks signatures on relayed deliveries (docs/push-relay.md, "Signatures").

A tenant with `push_signing` gets three headers on every delivery attempt, besides the
A2A token its client registered:

- ``webhook-id``: the delivery's stable id (delivery.py sets it; the same on retries);
- ``webhook-timestamp``: Unix seconds of this attempt (fresh on every retry, so a
  receiver's freshness window applies to the attempt, not to the first one);
- ``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, one
  per configured key, space-separated, so a receiver holding either key of a rotation
  verifies it.

Secrets are ``whsec_`` + standard base64 (the spec's and the SDKs' format). The body
signed is the exact bytes sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

from gateway.auth.secrets import SecretError, read_source
from gateway.config.models import ConfigProblems, GatewayConfig

PREFIX = "whsec_"
# The spec's range for a secret: below 24 bytes an HMAC key is guessable, above 64 it
# is hashed down by HMAC anyway.
MIN_BYTES, MAX_BYTES = 24, 64
TIMESTAMP = "webhook-timestamp"
SIGNATURE = "webhook-signature"


def decode_secret(text: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret; ValueError saying what is wrong (never the
    secret)."""
    text = text.strip()
    if not text.startswith(PREFIX):
        raise ValueError(f"a signing secret starts with {PREFIX!r} (make one with: "
                         f"a2a-gateway keygen webhook)")
    body = text[len(PREFIX):]
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"a signing secret is {PREFIX!r} followed by standard base64; "
                         f"this one is not base64") from None
    if not MIN_BYTES <= len(key) <= MAX_BYTES:
        raise ValueError(f"a signing secret holds {MIN_BYTES} to {MAX_BYTES} bytes; this "
                         f"one holds {len(key)}")
    return key


class WebhookSigner:
    """Signs one attempt's body with every key of a tenant, newest first."""

    def __init__(self, keys: list[bytes]) -> None:
        if not keys:
            raise ValueError("at least one key")
        self._keys = list(keys)

    def headers(self, webhook_id: str, body: bytes, timestamp: int) -> dict[str, str]:
        signed = f"{webhook_id}.{timestamp}.".encode() + body
        signatures = " ".join(
            "v1," + base64.b64encode(hmac.digest(key, signed, hashlib.sha256)).decode()
            for key in self._keys)
        return {TIMESTAMP: str(timestamp), SIGNATURE: signatures}


def load_signers(config: GatewayConfig) -> dict[str, WebhookSigner]:
    """Each signing tenant's signer, its secrets read now. Every unusable key is a line
    naming its YAML path (ConfigProblems), so preflight reports them all at once."""
    signers: dict[str, WebhookSigner] = {}
    problems: list[str] = []
    for name, tenant in config.tenants.items():
        if tenant.push_signing is None:
            continue
        keys: list[bytes] = []
        for i, source in enumerate(tenant.push_signing.keys):
            where = "file" if source.file is not None else "env"
            try:
                keys.append(decode_secret(read_source(source)))
            except (SecretError, ValueError) as exc:
                problems.append(f"tenants.{name}.push_signing.keys.{i}.{where}: {exc}")
        if len(keys) == len(tenant.push_signing.keys):
            signers[name] = WebhookSigner(keys)
    if problems:
        raise ConfigProblems(problems)
    return signers


def signing_headers(signers: Mapping[str, WebhookSigner], tenant: str, webhook_id: str,
                    body: bytes, timestamp: int) -> dict[str, str]:
    """The signature headers of one attempt for ``tenant`` (none when it does not sign)."""
    signer = signers.get(tenant)
    return {} if signer is None else signer.headers(webhook_id, body, timestamp)
