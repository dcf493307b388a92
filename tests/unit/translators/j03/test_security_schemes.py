"""The security scheme table (reference §4.4): every J03 `type` ⇄ its v1.0 wrapper key."""

from __future__ import annotations

from typing import Any

import pytest

from translators.j03.cards import scheme_to_j03, scheme_to_p10
from translators.loss import LossReport

TABLE: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"type": "apiKey", "in": "query", "name": "key", "description": "d"},
     {"apiKeySecurityScheme": {"location": "query", "name": "key", "description": "d"}}),
    ({"type": "http", "scheme": "Bearer", "bearerFormat": "JWT"},
     {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}),
    ({"type": "oauth2", "oauth2MetadataUrl": "https://a/.well-known/oauth",
      "flows": {"clientCredentials": {"tokenUrl": "https://a/t", "scopes": {"r": "read"}}}},
     {"oauth2SecurityScheme": {"oauth2MetadataUrl": "https://a/.well-known/oauth",
      "flows": {"clientCredentials": {"tokenUrl": "https://a/t", "scopes": {"r": "read"}}}}}),
    ({"type": "openIdConnect", "openIdConnectUrl": "https://a/.well-known/openid"},
     {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://a/.well-known/openid"}}),
    ({"type": "mutualTLS"}, {"mtlsSecurityScheme": {}}),
]


@pytest.mark.parametrize(("j03", "p10"), TABLE, ids=[t[0]["type"] for t in TABLE])
def test_scheme_both_ways(j03: dict[str, Any], p10: dict[str, Any]) -> None:
    loss = LossReport()
    assert scheme_to_p10(j03, "s", loss) == p10
    assert scheme_to_j03(p10, "s", loss) == j03
    assert not loss


def test_several_oauth_flows_keep_the_strongest_and_report_the_rest() -> None:
    loss = LossReport()
    flows = {"implicit": {"authorizationUrl": "https://a/i", "scopes": {}},
             "authorizationCode": {"authorizationUrl": "https://a/a", "tokenUrl": "https://a/t",
                                   "scopes": {}}}
    out = scheme_to_p10({"type": "oauth2", "flows": flows}, "securitySchemes.o", loss)
    assert list(out["oauth2SecurityScheme"]["flows"]) == ["authorizationCode"]
    assert loss.request == ["securitySchemes.o.flows.implicit"]


def test_unknown_type_is_reported() -> None:
    loss = LossReport()
    assert scheme_to_p10({"type": "kerberos"}, "securitySchemes.k", loss) == {}
    assert loss.request == ["securitySchemes.k"]
