"""Standard Webhooks signatures (gateway/relay/signing.py): the spec's published test
vector, one signature per key in the configured order, and every unusable secret named
by its YAML path (what preflight prints)."""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.auth.keygen import webhook_secret
from gateway.config.models import ConfigProblems, parse_config
from gateway.preflight import problems_of
from gateway.relay.signing import WebhookSigner, decode_secret, load_signers

# The test vector of the Standard Webhooks libraries (and Svix's).
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID, VECTOR_TS = "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_published_vector() -> None:
    headers = WebhookSigner([decode_secret(VECTOR_SECRET)]).headers(
        VECTOR_ID, VECTOR_BODY, VECTOR_TS)
    assert headers == {"webhook-timestamp": str(VECTOR_TS),
                       "webhook-signature": VECTOR_SIGNATURE}


def test_one_signature_per_key_newest_first_each_verifies() -> None:
    new, old = webhook_secret(), webhook_secret()
    now = int(datetime.now(UTC).timestamp())
    headers = WebhookSigner([decode_secret(new), decode_secret(old)]).headers(
        "msg_1", b'{"a":1}', now)
    signatures = headers["webhook-signature"].split(" ")
    assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
    at = datetime.fromtimestamp(now, UTC)
    assert signatures == [Webhook(k).sign("msg_1", at, b'{"a":1}') for k in (new, old)]
    every = {**headers, "webhook-id": "msg_1"}
    for key in (new, old):  # a receiver holding either key of the rotation
        assert Webhook(key).verify(b'{"a":1}', every) == {"a": 1}
    with pytest.raises(WebhookVerificationError):
        Webhook(new).verify(b'{"a":2}', every)


@pytest.mark.parametrize(("secret", "says"), [
    ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with 'whsec_'"),
    ("whsec_not*base64!", "not base64"),
    ("whsec_" + base64.b64encode(os.urandom(8)).decode(), "this one holds 8"),
])
def test_bad_secrets(secret: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        decode_secret(secret)
    assert secret[6:] not in str(caught.value)  # never the secret itself


def test_each_unusable_key_is_one_line_naming_its_yaml_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "good"
    good.write_text(webhook_secret() + "\n")
    monkeypatch.setenv("SIG_BAD", "whsec_not*base64!")
    monkeypatch.delenv("SIG_MISSING", raising=False)
    config = parse_config({"tenants": {
        "a": {"backend": {"url": "http://127.0.0.1:1/", "version": "1.0"},
              "push_signing": {"keys": [{"file": str(good)}, {"env": "SIG_MISSING"}]}},
        "b": {"backend": {"url": "http://127.0.0.1:1/", "version": "1.0"},
              "push_signing": {"keys": [{"env": "SIG_BAD"}]}}}})
    with pytest.raises(ConfigProblems) as caught:
        load_signers(config)
    assert caught.value.problems == [
        "tenants.a.push_signing.keys.1.env: the secret in environment variable "
        "SIG_MISSING is empty",
        "tenants.b.push_signing.keys.0.env: a signing secret is 'whsec_' followed by "
        "standard base64; this one is not base64"]
    assert problems_of(config, {}) == caught.value.problems  # what `check-config` prints
    monkeypatch.setenv("SIG_MISSING", webhook_secret())
    monkeypatch.setenv("SIG_BAD", webhook_secret())
    assert sorted(load_signers(config)) == ["a", "b"]
