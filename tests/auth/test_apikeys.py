"""API keys: hashed in config or read from a file / variable, compared in constant time,
refused with a challenge that never echoes the key."""

from __future__ import annotations

import hmac
import io
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.auth import apikeys
from gateway.auth.apikeys import hash_key
from gateway.auth.authenticator import Authenticator
from gateway.auth.principal import CHALLENGE_KEY
from gateway.cli import main as cli
from gateway.config.auth import AuthConfig
from translators.errors import A2AError

KEY = "k-3f9a1c2e7b"
OTHER = "k-other-77"


def _auth(**api: Any) -> Authenticator:
    keys = api.pop("keys", [{"principal": "alice", "sha256": hash_key(KEY), "scopes": ["r"]},
                            {"principal": "bob", "sha256": hash_key(OTHER)}])
    return Authenticator.from_config(AuthConfig.model_validate(
        {"required": True, "api_keys": {"keys": keys, **api}}))


async def test_right_key_in_each_place_names_its_principal() -> None:
    auth = _auth()
    for headers in ({"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"},
                    {"authorization": f"ApiKey {KEY}"}, {"x-api-key": [KEY]}):
        principal = await auth.authenticate(headers)
        assert principal is not None and principal.name == "alice"
        assert principal.scopes == {"r"} and principal.method == "api_key"
    other = await auth.authenticate({"x-api-key": OTHER})
    assert other is not None and other.name == "bob"


async def test_wrong_key_is_refused_without_echoing_it() -> None:
    auth = _auth()
    with pytest.raises(A2AError) as caught:
        await auth.authenticate({"Authorization": "Bearer not-the-key-123"})
    err = caught.value
    assert err.kind.name == "UnauthenticatedError" and err.metadata["failure"] == "invalid_key"
    assert "not-the-key-123" not in repr(err) and "not-the-key-123" not in str(err.metadata)
    assert err.metadata[CHALLENGE_KEY] == ('Bearer realm="a2a-gateway", error="invalid_token", '
                                           'error_description="the API key is not valid", '
                                           'ApiKey realm="a2a-gateway"')


async def test_missing_credential_when_required_and_anonymous_when_not() -> None:
    with pytest.raises(A2AError) as caught:
        await _auth().authenticate({})
    assert caught.value.metadata["failure"] == "missing"
    assert caught.value.metadata[CHALLENGE_KEY] == ('Bearer realm="a2a-gateway", '
                                                    'ApiKey realm="a2a-gateway"')
    optional = Authenticator.from_config(AuthConfig.model_validate(
        {"api_keys": {"keys": [{"principal": "a", "sha256": hash_key(KEY)}]}}))
    assert await optional.authenticate({}) is None
    with pytest.raises(A2AError):  # a credential presented is checked even then
        await optional.authenticate({"x-api-key": "wrong"})


async def test_unknown_authorization_scheme_is_malformed() -> None:
    with pytest.raises(A2AError) as caught:
        await _auth().authenticate({"Authorization": f"Basic {KEY}"})
    assert caught.value.metadata["failure"] == "malformed"
    assert 'error="invalid_request"' in caught.value.metadata[CHALLENGE_KEY]


async def test_every_stored_digest_is_compared_with_compare_digest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(apikeys.hmac, "compare_digest", spy)
    auth = _auth()
    assert (await auth.authenticate({"x-api-key": KEY})) is not None
    assert len(calls) == 2  # both keys, though the first matched
    await auth.authenticate({"x-api-key": OTHER})
    assert len(calls) == 4


async def test_keys_from_a_file_and_a_variable(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "key").write_text(KEY + "\n")
    monkeypatch.setenv("TEST_API_KEY", OTHER)
    auth = _auth(keys=[{"principal": "file", "key_file": str(tmp_path / "key")},
                       {"principal": "env", "key_env": "TEST_API_KEY"}], header="x-key")
    assert (await auth.authenticate({"X-Key": KEY})).name == "file"  # type: ignore[union-attr]
    assert (await auth.authenticate({"X-Key": OTHER})).name == "env"  # type: ignore[union-attr]
    with pytest.raises(A2AError):
        await auth.authenticate({"X-API-Key": KEY})  # not the configured header: missing


def test_hash_key_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                      ) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(KEY + "\n"))
    assert cli(["hash-key"]) == 0
    assert capsys.readouterr().out.strip() == hash_key(KEY)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert cli(["hash-key"]) == 2
