"""Agent card: v0.3 (J03) ⇄ v1.0 (P10) (reference §4.2-§4.5).

The card is J03 on every v0.3 binding and P10 on every v1.0 binding. Signatures are
kept here; whoever rewrites a card decides whether they still hold (§4.6).
"""

from __future__ import annotations

from typing import Any

from translators.j03.common import copy_keys, lookup, need_dict, need_list
from translators.loss import LossReport
from translators.versions import V03, V03_CARD_VERSION, normalize_version
from translators.vocabulary import JSON

# J03 `type` → P10 oneof wrapper key, and the field renames inside (§4.4).
SCHEME_TYPE_TO_KEY = {
    "apiKey": "apiKeySecurityScheme",
    "http": "httpAuthSecurityScheme",
    "oauth2": "oauth2SecurityScheme",
    "openIdConnect": "openIdConnectSecurityScheme",
    "mutualTLS": "mtlsSecurityScheme",
}
SCHEME_KEY_TO_TYPE = {v: k for k, v in SCHEME_TYPE_TO_KEY.items()}
_SCHEME_RENAMES = {"in": "location"}
# The proto's OAuthFlows is a oneof; when J03 lists several, keep the strongest (§4.4).
FLOW_PREFERENCE = ("authorizationCode", "clientCredentials", "deviceCode", "implicit", "password")

# Not `signatures`: a JWS covers one shape of the card, so a translated card cannot keep
# the signatures of the other (whoever serves it may sign its own shape, §4.6).
_SHARED_CARD_KEYS = ("name", "description", "provider", "version", "documentationUrl",
                     "defaultInputModes", "defaultOutputModes", "iconUrl")
# The one v0.3 card field v1.0 has no place for (reference §8.8).
STATE_TRANSITION_HISTORY = "capabilities.stateTransitionHistory"
_SKILL_KEYS = ("id", "name", "description", "tags", "examples", "inputModes", "outputModes")


def security_to_p10(reqs: Any) -> list[JSON]:
    return [{"schemes": {name: {"list": need_list(scopes, f"security.{name}")}
                         for name, scopes in req.items()}}
            for req in need_list(reqs or [], "security") if isinstance(req, dict)]


def security_to_j03(reqs: Any) -> list[JSON]:
    return [{name: list((scopes or {}).get("list", []))
             for name, scopes in (req.get("schemes") or {}).items()}
            for req in reqs or [] if isinstance(req, dict)]


def scheme_to_p10(scheme: JSON, path: str, loss: LossReport) -> JSON:
    key = lookup(SCHEME_TYPE_TO_KEY, scheme.get("type"))
    if key is None:
        loss.drop(path)
        return {}
    body = {_SCHEME_RENAMES.get(k, k): v for k, v in scheme.items() if k != "type"}
    flows = body.get("flows")
    if isinstance(flows, dict):
        present = [f for f in FLOW_PREFERENCE if f in flows]
        for dropped in present[1:]:
            loss.drop(f"{path}.flows.{dropped}")
        body["flows"] = {present[0]: flows[present[0]]} if present else {}
    return {key: body}


def scheme_to_j03(scheme: JSON, path: str, loss: LossReport) -> JSON:
    for key, body in scheme.items():
        kind = SCHEME_KEY_TO_TYPE.get(key)
        if kind is None:
            continue
        out: JSON = {"type": kind}
        for k, v in body.items():
            out["in" if k == "location" else k] = v
        flows = out.get("flows")
        if isinstance(flows, dict) and "deviceCode" in flows:
            loss.drop(f"{path}.flows.deviceCode")
            flows = {k: v for k, v in flows.items() if k != "deviceCode"}
            out["flows"] = flows
        return out
    loss.drop(path)
    return {}


def _skills(skills: Any, to_p10: bool) -> list[JSON]:
    out = []
    for skill in need_list(skills or [], "skills"):
        if not isinstance(skill, dict):
            continue
        s: JSON = {}
        copy_keys(skill, s, *_SKILL_KEYS)
        if to_p10 and skill.get("security"):
            s["securityRequirements"] = security_to_p10(skill["security"])
        if not to_p10 and skill.get("securityRequirements"):
            s["security"] = security_to_j03(skill["securityRequirements"])
        out.append(s)
    return out


def card_to_p10(card: Any, loss: LossReport) -> JSON:
    card = need_dict(card, "card")
    out: JSON = {}
    copy_keys(card, out, *_SHARED_CARD_KEYS)
    # v1.0 interfaces carry Major.Minor only (§4.2): `0.3.0` → `0.3`; none said → 0.3.
    said = card.get("protocolVersion")
    version = normalize_version(str(said) if said else None)
    interfaces: list[JSON] = []
    if card.get("url"):
        interfaces.append({"url": card["url"],
                           "protocolBinding": card.get("preferredTransport") or "JSONRPC",
                           "protocolVersion": version})
    for i, extra in enumerate(need_list(card.get("additionalInterfaces") or [],
                                        "card.additionalInterfaces")):
        extra = need_dict(extra, f"card.additionalInterfaces[{i}]")
        entry = {"url": extra.get("url", ""), "protocolBinding": extra.get("transport", ""),
                 "protocolVersion": version}
        if entry not in interfaces:
            interfaces.append(entry)
    out["supportedInterfaces"] = interfaces
    if card.get("signatures"):
        loss.drop("signatures")
    caps = dict(need_dict(card.get("capabilities") or {}, "card.capabilities"))
    history = caps.pop("stateTransitionHistory", None)
    if history is not None:
        loss.hold(STATE_TRANSITION_HISTORY, history)  # a v0.3 reader gets it back
    if card.get("supportsAuthenticatedExtendedCard") is not None:
        caps["extendedAgentCard"] = bool(card["supportsAuthenticatedExtendedCard"])
    out["capabilities"] = caps
    if card.get("securitySchemes"):
        out["securitySchemes"] = {
            name: scheme_to_p10(s, f"securitySchemes.{name}", loss)
            for name, s in need_dict(card["securitySchemes"], "card.securitySchemes").items()
            if isinstance(s, dict)}
    if card.get("security"):
        out["securityRequirements"] = security_to_p10(card["security"])
    out["skills"] = _skills(card.get("skills"), to_p10=True)
    return out


def card_for_v03(card: JSON, loss: LossReport) -> JSON:
    """The card a v0.3 client is served: only the v0.3 interfaces, since a v0.3 card
    cannot say which of its entries speak 1.0."""
    return card_to_j03(card, loss, versions=(V03,))


def card_to_j03(card: JSON, loss: LossReport, *, versions: tuple[str, ...] = ()) -> JSON:
    """A v1.0 card as v0.3 clients read it. ``versions`` limits which interfaces appear
    (by protocolVersion); by default all of them do, the first being `url`."""
    out: JSON = {"protocolVersion": V03_CARD_VERSION}
    copy_keys(card, out, *_SHARED_CARD_KEYS)
    interfaces = [i for i in card.get("supportedInterfaces", [])
                  if not versions or i.get("protocolVersion") in versions]
    if interfaces:
        out["url"] = interfaces[0].get("url", "")
        out["preferredTransport"] = interfaces[0].get("protocolBinding", "JSONRPC")
        out["additionalInterfaces"] = [
            {"url": i.get("url", ""), "transport": i.get("protocolBinding", "")} for i in interfaces]
    if card.get("signatures"):
        loss.drop("signatures")
    caps = dict(card.get("capabilities") or {})
    extended = caps.pop("extendedAgentCard", None)
    history = loss.take(STATE_TRANSITION_HISTORY)
    if history is not None:
        caps["stateTransitionHistory"] = history
    out["capabilities"] = caps
    if extended is not None:
        out["supportsAuthenticatedExtendedCard"] = bool(extended)
    if card.get("securitySchemes"):
        out["securitySchemes"] = {
            name: scheme_to_j03(s, f"securitySchemes.{name}", loss)
            for name, s in card["securitySchemes"].items()}
    if card.get("securityRequirements"):
        out["security"] = security_to_j03(card["securityRequirements"])
    out["skills"] = _skills(card.get("skills"), to_p10=False)
    out.setdefault("defaultInputModes", [])
    out.setdefault("defaultOutputModes", [])
    return out
