"""Authorization: allow rules by principal, scope and operation; the read-only shorthand;
a principal bound to one tenant never calls another."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.auth.apikeys import hash_key
from gateway.auth.authorize import Authorizer
from gateway.auth.principal import Principal
from gateway.auth.service import GatewayAuth
from gateway.config.auth import AllowRule
from gateway.config.models import AuthConfig
from translators.errors import A2AError
from translators.operations import OPERATIONS

READER = Principal("reader", "api_key", frozenset({"tasks.read"}))
WRITER = Principal("writer", "jwt", frozenset({"tasks.read", "tasks.write"}))


def rules(*raw: dict[str, Any]) -> list[AllowRule]:
    return [AllowRule.model_validate(r) for r in raw]


def denied(authz: Authorizer, principal: Principal | None, op: str,
           tenant: str = "t") -> A2AError:
    with pytest.raises(A2AError) as caught:
        authz.authorize(principal, tenant, op)
    assert caught.value.kind.name == "PermissionDeniedError"
    return caught.value


def test_read_only_principal_can_get_but_not_send() -> None:
    authz = Authorizer("t", rules({"principals": ["reader"], "read_only": True},
                                  {"principals": ["writer"]}))
    for op in ("GetTask", "ListTasks", "SubscribeToTask", "GetExtendedAgentCard",
               "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs"):
        authz.authorize(READER, "t", op)
    err = denied(authz, READER, "SendMessage")
    assert err.message == "principal 'reader' may not call SendMessage on tenant 't'"
    for op in OPERATIONS:
        authz.authorize(WRITER, "t", op.name)
    denied(authz, None, "GetTask")  # no rule lets anonymous callers in


def test_scopes_and_anyone() -> None:
    authz = Authorizer("t", rules({"scopes": ["tasks.write"]},
                                  {"principals": ["*"], "operations": ["GetExtendedAgentCard"]}))
    authz.authorize(WRITER, "t", "SendMessage")
    denied(authz, READER, "SendMessage")
    authz.authorize(None, "t", "GetExtendedAgentCard")
    denied(authz, None, "GetTask")


def test_no_rules_allow_whoever_authentication_let_through() -> None:
    Authorizer("t", None).authorize(None, "t", "SendMessage")
    denied(Authorizer("t", []), READER, "GetTask")  # an empty list allows nobody


def test_bound_principal_never_crosses_tenants() -> None:
    bound = Principal("a-client", "api_key", tenants=frozenset({"a"}))
    Authorizer("a", None).authorize(bound, "a", "SendMessage")
    err = denied(Authorizer("b", None), bound, "SendMessage", tenant="b")
    assert err.metadata["tenant"] == "b"
    denied(Authorizer("a", None), READER, "GetTask", tenant="b")  # another tenant's rules


async def test_tenant_keys_are_good_for_their_tenant_only() -> None:
    key_a, key_shared = "key-of-a", "key-shared"
    auth = GatewayAuth(
        AuthConfig.model_validate({"required": True, "api_keys": {"keys": [
            {"principal": "ops", "sha256": hash_key(key_shared), "tenants": ["b"]}]}}),
        {"a": AuthConfig.model_validate({"api_keys": {"keys": [
            {"principal": "a-client", "sha256": hash_key(key_a)}]}}),
         "b": None, "c": None})
    a, b, c = auth.for_tenant("a"), auth.for_tenant("b"), auth.for_tenant("c")
    principal = await a.admit({"x-api-key": key_a}, None, "SendMessage")
    assert principal is not None and principal.tenants == {"a"}
    with pytest.raises(A2AError) as caught:  # b does not know a's key at all
        await b.admit({"x-api-key": key_a}, None, "SendMessage")
    assert caught.value.kind.name == "UnauthenticatedError"
    assert await b.admit({"x-api-key": key_shared}, None, "GetTask") is not None
    with pytest.raises(A2AError) as caught:  # a gateway-wide key limited to tenant b
        await c.admit({"x-api-key": key_shared}, None, "GetTask")
    assert caught.value.kind.name == "PermissionDeniedError"
    # Even handed to another tenant's rules, a's principal is refused.
    with pytest.raises(A2AError):
        b.authorizer.authorize(principal, "b", "GetTask")
    # The key a's tenant consumed is not forwarded to a's backend by default.
    assert await a.backend.headers({"x-api-key": key_a, "x-other": "1"}) == {"x-other": "1"}


def test_required_without_a_method_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="needs api_keys"):
        GatewayAuth(AuthConfig(required=True), {"t": None})
