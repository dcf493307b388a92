"""Signing served cards: JWS (RFC 7515, ES256, detached payload) over the JCS form of the
card (RFC 8785) with `signatures` left out, as spec §8.4 describes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from gateway.config.models import CardSigningConfig


def canonical_json(value: Any) -> bytes:
    """RFC 8785 for the values cards hold: sorted keys, no spaces, UTF-8. (Member names
    are sorted by code point, which equals JCS's UTF-16 order outside astral planes.)"""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signing_input(protected: str, card: dict[str, Any]) -> bytes:
    body = {k: v for k, v in card.items() if k != "signatures"}
    return f"{protected}.{_b64url(canonical_json(body))}".encode()


class CardSigner:
    def __init__(self, config: CardSigningConfig) -> None:
        key = serialization.load_pem_private_key(Path(config.key_file).read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
            raise ValueError(f"{config.key_file}: card signing needs an EC P-256 key (ES256)")
        self._key = key
        header: dict[str, str] = {"alg": "ES256", "typ": "JOSE"}
        if config.kid:
            header["kid"] = config.kid
        if config.jku:
            header["jku"] = config.jku
        self._protected = _b64url(canonical_json(header))

    def sign(self, card: dict[str, Any]) -> dict[str, Any]:
        der = self._key.sign(_signing_input(self._protected, card), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        raw = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return {**card, "signatures": [{"protected": self._protected,
                                        "signature": _b64url(raw)}]}


def verify(card: dict[str, Any], public_key: ec.EllipticCurvePublicKey) -> bool:
    """True when one of the card's signatures verifies with the key (for tests/tools)."""
    for sig in card.get("signatures") or []:
        raw = _unb64url(sig["signature"])
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"),
                                   int.from_bytes(raw[32:], "big"))
        try:
            public_key.verify(der, _signing_input(sig["protected"], card),
                              ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            continue
    return False
