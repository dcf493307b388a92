"""`a2a-gateway keygen`: fresh secrets in exactly the formats the gateway loads, so that no
recipe needs `openssl` incantations (or ships a placeholder that cannot start).

- relay: 32 random bytes in URL-safe base64, as `push_relay.keys` and the relay-key
  environment variable hold them (gateway/relay/seals.py decode_key);
- card-signing: an EC P-256 private key in PEM (PKCS#8), what `card_signing.key_file`
  reads (gateway/cards/signing.py), and its public key as a JWK set (for `jku`);
- webhook: a Standard Webhooks signing secret, `whsec_` + base64 of 32 random bytes, as
  `tenants.<name>.push_signing.keys` read it (gateway/relay/signing.py decode_secret);
- api-key: a random key for the caller, and its SHA-256 as `auth.api_keys.keys[].sha256`
  stores it (gateway/auth/apikeys.py hash_key).
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from gateway.auth.apikeys import hash_key

RELAY_KEY_BYTES = 32  # AES-256-GCM
WEBHOOK_SECRET_BYTES = 32  # SHA-256's output size, within the spec's 24 to 64
API_KEY_BYTES = 32  # 256 bits of entropy: no guessing, and the hash needs no salt


def relay_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(RELAY_KEY_BYTES)).decode()


def webhook_secret() -> str:
    # Standard base64 (not URL-safe): the format Standard Webhooks' libraries decode.
    return "whsec_" + base64.b64encode(secrets.token_bytes(WEBHOOK_SECRET_BYTES)).decode()


def api_key() -> tuple[str, str]:
    """A key and its hex SHA-256."""
    key = secrets.token_urlsafe(API_KEY_BYTES)
    return key, hash_key(key)


def _b64url_int(value: int) -> str:
    return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()


def card_signing_key(kid: str | None = None) -> tuple[str, dict[str, Any]]:
    """A private key PEM for `card_signing.key_file`, and the JWK set of its public key."""
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    numbers = key.public_key().public_numbers()
    jwk: dict[str, Any] = {"kty": "EC", "crv": "P-256", "x": _b64url_int(numbers.x),
                           "y": _b64url_int(numbers.y), "use": "sig", "alg": "ES256"}
    if kid:
        jwk["kid"] = kid
    return pem, {"keys": [jwk]}
