"""Shared by the golden-pair tests: ProtoJSON normal forms, timestamps as instants, and
the reference's §4.5 agent card in its three shapes (J03, P03, P10)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from translators import operations as ops
from translators.p03.json import dump_p03, parse_p03
from translators.protojson import dump_p10, parse_p10

# The operations, by their canonical names, as the golden tests call them.
SEND = ops.BY_NAME[ops.SEND]
STREAM = ops.BY_NAME[ops.STREAM]
GET_TASK = ops.BY_NAME[ops.GET_TASK]
CANCEL = ops.BY_NAME[ops.CANCEL]
SUBSCRIBE = ops.BY_NAME[ops.SUBSCRIBE]
PUSH_CREATE = ops.BY_NAME[ops.PUSH_CREATE]
PUSH_GET = ops.BY_NAME[ops.PUSH_GET]
PUSH_LIST = ops.BY_NAME[ops.PUSH_LIST]
PUSH_DELETE = ops.BY_NAME[ops.PUSH_DELETE]
EXTENDED_CARD = ops.BY_NAME[ops.EXTENDED_CARD]

JSON = dict[str, Any]


def instant(value: str) -> datetime:
    """The moment an ISO 8601 string names; naive means UTC (reference §3.4)."""
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def timestamps_as_instants(value: Any) -> Any:
    """Replace every `timestamp` string by its instant, so spellings do not matter."""
    if isinstance(value, dict):
        return {k: instant(v) if k == "timestamp" and isinstance(v, str)
                else timestamps_as_instants(v) for k, v in value.items()}
    if isinstance(value, list):
        return [timestamps_as_instants(v) for v in value]
    return value


def through_proto(data: dict[str, Any], cls: type[Any]) -> dict[str, Any]:
    """P10 normal form: what ProtoJSON prints after parsing ``data``."""
    return dump_p10(parse_p10(data, cls))


def norm03(data: JSON, cls: type[Any]) -> JSON:
    """P03 normal form: what ProtoJSON prints after parsing ``data``."""
    return dump_p03(parse_p03(data, cls))


# ---------------------------------------------------------------- reference §4.5

CARD_J03: JSON = {
    "protocolVersion": "0.3.0", "name": "Geo", "description": "Routes",
    "url": "https://g.example/a2a/v1", "preferredTransport": "JSONRPC",
    "additionalInterfaces": [{"url": "https://g.example/a2a/v1", "transport": "JSONRPC"},
                             {"url": "https://g.example/a2a/json", "transport": "HTTP+JSON"}],
    "version": "1.2.0",
    "capabilities": {"streaming": True, "pushNotifications": False,
                     "stateTransitionHistory": False},
    "securitySchemes": {"google": {
        "type": "openIdConnect",
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}},
    "security": [{"google": ["openid"]}], "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "r", "name": "Route", "description": "d", "tags": ["maps"],
                "security": [{"google": ["openid"]}]}],
    "supportsAuthenticatedExtendedCard": True}
CARD_P03: JSON = {
    "protocolVersion": "0.3.0", "name": "Geo", "description": "Routes",
    "url": "https://g.example/a2a/v1", "preferredTransport": "JSONRPC",
    "additionalInterfaces": [{"url": "https://g.example/a2a/v1", "transport": "JSONRPC"},
                             {"url": "https://g.example/a2a/json", "transport": "HTTP+JSON"}],
    "version": "1.2.0", "capabilities": {"streaming": True},
    "securitySchemes": {"google": {"openIdConnectSecurityScheme": {
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}},
    "security": [{"schemes": {"google": {"list": ["openid"]}}}],
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "r", "name": "Route", "description": "d", "tags": ["maps"],
                "security": [{"schemes": {"google": {"list": ["openid"]}}}]}],
    "supportsAuthenticatedExtendedCard": True}
CARD_P10: JSON = {
    "name": "Geo", "description": "Routes",
    "supportedInterfaces": [
        {"url": "https://g.example/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "https://g.example/a2a/json", "protocolBinding": "HTTP+JSON",
         "protocolVersion": "0.3"}],
    "version": "1.2.0",
    "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": True},
    "securitySchemes": {"google": {"openIdConnectSecurityScheme": {
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}},
    "securityRequirements": [{"schemes": {"google": {"list": ["openid"]}}}],
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "r", "name": "Route", "description": "d", "tags": ["maps"],
                "securityRequirements": [{"schemes": {"google": {"list": ["openid"]}}}]}]}
