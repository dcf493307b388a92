"""The auth config: what it refuses, and how a tenant's settings override the gateway's."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.config.auth import READ_ONLY, AuthConfig, effective
from gateway.config.models import ConfigError, parse_config

JWKS = {"jwks_url": "https://issuer.example/jwks.json"}


@pytest.mark.parametrize("algorithms", [["none"], ["HS256"], ["RS256", "HS512"], []])
def test_jwt_algorithms_are_public_key_ones_only(algorithms: list[str]) -> None:
    with pytest.raises(ValidationError, match="algorithms"):
        AuthConfig.model_validate({"jwt": {**JWKS, "algorithms": algorithms}})


@pytest.mark.parametrize(("section", "match"), [
    ({"jwt": {}}, "jwks_url"),
    ({"jwt": {**JWKS, "jwks_file": "x"}}, "jwks_url"),
    ({"api_keys": {"keys": [{"principal": "a", "sha256": "zz"}]}}, "64 hex"),
    ({"api_keys": {"keys": [{"principal": "a"}]}}, "exactly one"),
    ({"allow": [{"operations": ["Nope"]}]}, "unknown operations"),
    ({"allow": [{"operations": ["GetTask"], "read_only": True}]}, "not both"),
    ({"backend_auth": {"mode": "replace"}}, "exactly one"),
    ({"backend_auth": {"mode": "drop", "bearer": {"env": "X"}}}, "takes no credential"),
    ({"backend_auth": {"mode": "replace", "bearer": {"env": "X", "file": "y"}}}, "exactly one"),
    ({"realm": 'a"b'}, "realm"),
])
def test_refused_sections(section: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        AuthConfig.model_validate(section)


def test_read_only_shorthand() -> None:
    rule = AuthConfig.model_validate({"allow": [{"read_only": True}]}).allow[0]  # type: ignore[index]
    assert rule.allowed_operations() == set(READ_ONLY)
    assert "SendMessage" not in READ_ONLY and "GetTask" in READ_ONLY


def test_tenant_fields_replace_the_gateways() -> None:
    gateway = AuthConfig.model_validate({"required": True, "jwt": JWKS,
                                         "rate_limits": {"tenant": {"rate": 5, "burst": 10}}})
    tenant = AuthConfig.model_validate({"api_keys": {"keys": [
        {"principal": "a", "sha256": "0" * 64}]}, "jwt": None})
    merged = effective(gateway, tenant)
    assert merged.required and merged.jwt is None and merged.api_keys is not None
    assert merged.rate_limits is not None and merged.rate_limits.tenant is not None
    assert effective(gateway, None) is gateway
    assert effective(None, None) == AuthConfig()


def test_gateway_config_takes_auth_once_and_tenant_auth_once() -> None:
    config = parse_config({"auth": {"jwt": JWKS, "required": True},
                           "tenants": {"a": {"backend": {"url": "http://x/", "version": "1.0"},
                                             "auth": {"required": False}}}})
    assert config.auth is not None and config.tenants["a"].auth is not None
    with pytest.raises(ConfigError, match="server_tls"):
        parse_config({"tenants": {"a": {
            "backend": {"url": "http://x/", "version": "1.0"},
            "auth": {"server_tls": {"cert_file": "c", "key_file": "k"}}}}})
