"""What a call's context gives an agent that is not the tenant's backend (gateway/call.py):
the headers without the gateway's own credential for the tenant's backend."""

from __future__ import annotations

import pytest

from gateway.auth.backend_creds import BackendCredentials
from gateway.call import CallContext, ClientFacts
from gateway.config.auth import BackendAuthConfig


def test_another_agent_gets_the_headers_without_the_gateways_credential() -> None:
    ctx = CallContext(ClientFacts("JSONRPC"), "1.0")
    ctx.backend_headers = {"authorization": "Bearer gw", "x-api-key": "k", "x-trace": "t"}
    assert ctx.headers_for_another_agent() is ctx.backend_headers  # nothing of the gateway's
    ctx.gateway_credential = frozenset({"authorization"})
    assert ctx.headers_for_another_agent() == {"x-api-key": "k", "x-trace": "t"}


def test_the_credential_the_gateway_sets_is_named_only_in_replace_mode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "t")
    replace = BackendCredentials(BackendAuthConfig.model_validate(
        {"mode": "replace", "api_key": {"env": "TOKEN"}, "api_key_header": "x-agent-key"}),
        frozenset({"authorization"}))
    assert replace.own_headers == {"x-agent-key"}
    bearer = BackendCredentials(BackendAuthConfig.model_validate(
        {"mode": "replace", "bearer": {"env": "TOKEN"}}), frozenset())
    assert bearer.own_headers == {"authorization"}
    forward = BackendCredentials(BackendAuthConfig.model_validate({"mode": "forward"}),
                                 frozenset())
    assert forward.own_headers == frozenset()
