"""`a2a-gateway keygen`: each kind of secret, loaded by the very code that uses it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from gateway.auth.apikeys import hash_key
from gateway.auth.authenticator import Authenticator
from gateway.cards.signing import CardSigner, verify
from gateway.cli import main as cli
from gateway.config.auth import AuthConfig
from gateway.config.models import CardSigningConfig, PushRelayConfig, parse_config
from gateway.relay.seals import Sealer, load_keys
from tests.support.helpers import ROOT

TENANTS = {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert cli(["keygen", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_relay_key_loads_from_the_env_and_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _run(capsys, "relay")
    key = out.strip()
    assert out == key + "\n"
    keys, source = load_keys(PushRelayConfig(), {"A2A_GATEWAY_RELAY_KEYS": key})
    assert source == "env A2A_GATEWAY_RELAY_KEYS" and len(keys) == 1 and len(keys[0]) == 32
    # The same text is a valid `push_relay.keys` entry, and seals open with it.
    config = parse_config({"tenants": TENANTS, "push_relay": {"keys": [key]}})
    (from_config,), _ = load_keys(config.push_relay, {})
    assert from_config == keys[0]
    assert _run(capsys, "relay")[0].strip() != key  # fresh each time
    assert isinstance(Sealer(keys), Sealer)


def test_card_signing_key_signs_and_its_jwk_verifies(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pem, err = _run(capsys, "card-signing", "--kid", "k1")
    assert pem.startswith("-----BEGIN PRIVATE KEY-----\n")
    jwks = json.loads(err)  # without --jwk the public JWK set goes to stderr
    (jwk,) = jwks["keys"]
    assert {k: jwk[k] for k in ("kty", "crv", "alg", "use", "kid")} == {
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "k1"}
    key_file = tmp_path / "card.key"
    key_file.write_text(pem)
    signer = CardSigner(CardSigningConfig(key_file=str(key_file), kid="k1"))
    card = signer.sign({"name": "agent", "url": "https://gw.example/"})
    public = ECAlgorithm.from_jwk(json.dumps(jwk))  # a standard JWK: PyJWT reads it
    assert isinstance(public, ec.EllipticCurvePublicKey)
    assert verify(card, public)
    assert not verify({**card, "name": "other"}, public)

    jwk_file = tmp_path / "jwks.json"
    pem2, err2 = _run(capsys, "card-signing", "--jwk", str(jwk_file))
    assert err2 == "" and "kid" not in json.loads(jwk_file.read_text())["keys"][0]
    key_file.write_text(pem2)
    other = CardSigner(CardSigningConfig(key_file=str(key_file)))
    public2 = ECAlgorithm.from_jwk(json.dumps(json.loads(jwk_file.read_text())["keys"][0]))
    assert isinstance(public2, ec.EllipticCurvePublicKey)
    assert verify(other.sign({"name": "a"}), public2) and not verify(card, public2)


async def test_api_key_and_its_hash_authenticate(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _run(capsys, "api-key")
    key, digest = out.splitlines()
    assert digest == hash_key(key) and len(key) >= 43
    auth = Authenticator.from_config(AuthConfig.model_validate(
        {"required": True, "api_keys": {"keys": [{"principal": "ops", "sha256": digest}]}}))
    principal = await auth.authenticate({"x-api-key": key})
    assert principal is not None and principal.name == "ops"


def test_a_bad_relay_key_says_how_to_make_one(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """What the old sidecar manifest's placeholder did: now one line naming the command."""
    monkeypatch.setenv("A2A_GATEWAY_RELAY_KEYS", "replace-me")
    assert cli(["check-config", str(ROOT / "config/gateway.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("a2a-gateway: ") and err.count("\n") == 1, err
    assert err.endswith("env A2A_GATEWAY_RELAY_KEYS: every relay key must be 16, 24 or 32 bytes "
                        "in base64 (make one with: a2a-gateway keygen relay)\n"), err


def test_webhook_secret_is_what_push_signing_and_standard_webhooks_read(
        capsys: pytest.CaptureFixture[str]) -> None:
    from standardwebhooks.webhooks import Webhook

    from gateway.relay.signing import WebhookSigner, decode_secret

    out, _ = _run(capsys, "webhook")
    secret = out.strip()
    assert secret.startswith("whsec_") and len(decode_secret(secret)) == 32
    headers = WebhookSigner([decode_secret(secret)]).headers("msg_k", b"{}", int(time.time()))
    assert Webhook(secret).verify(b"{}", {**headers, "webhook-id": "msg_k"}) == {}
