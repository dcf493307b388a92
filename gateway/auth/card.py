"""What a served card says about authentication: when the gateway authenticates a
tenant's callers, the card names the gateway's schemes (v1.0 shape; the card translators
render the v0.3 one) instead of the backend's, which only the gateway ever meets."""

from __future__ import annotations

from gateway.config.auth import AuthConfig
from translators.vocabulary import JSON


def card_security(config: AuthConfig) -> tuple[JSON, list[JSON]] | None:
    """(securitySchemes, securityRequirements) for ``config``; None when it authenticates
    nobody (the backend's own then stand: a forwarded credential is checked there)."""
    if not config.authenticates:
        return None
    schemes: JSON = {}
    if config.jwt is not None:
        schemes["bearer"] = {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "bearerFormat": "JWT",
            "description": "A JWT from " + (config.jwt.issuer or "the configured issuer")}}
    keys = config.api_keys
    if keys is not None:
        accepted = {s.lower() for s in keys.authorization_schemes}
        if keys.header is not None:
            schemes["apiKey"] = {"apiKeySecurityScheme": {
                "location": "header", "name": keys.header,
                "description": "An API key issued by the gateway's operator"}}
        if "bearer" in accepted and "bearer" not in schemes:
            schemes["bearer"] = {"httpAuthSecurityScheme": {
                "scheme": "Bearer", "description": "An API key as a bearer token"}}
    if config.mtls is not None:
        schemes["mtls"] = {"mtlsSecurityScheme": {
            "description": "A client certificate from the gateway's client CA"}}
    # Any one scheme will do; without `required`, no credential at all will too (an
    # empty requirement).
    requirements: list[JSON] = [{"schemes": {name: {"list": []}}} for name in schemes]
    if not config.required:
        requirements.append({"schemes": {}})
    return schemes, requirements


def with_security(card: JSON, security: tuple[JSON, list[JSON]] | None) -> JSON:
    """``card`` (v1.0 JSON) naming the gateway's schemes, when it has any."""
    if security is None:
        return card
    schemes, requirements = security
    return {**card, "securitySchemes": schemes, "securityRequirements": requirements}
