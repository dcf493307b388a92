"""Property test: the agent card P10 → P03 → P10 (reference §4.2-§4.4), each way a codec
moves it, with the loss report naming exactly what v0.3 cannot carry."""

from __future__ import annotations

import copy

from a2a.types import a2a_pb2 as pb
from hypothesis import given
from hypothesis import strategies as st

from tests.support.p10_strategies import (
    JSON,
    ids,
    labels,
    media_types,
    meta_keys,
    metadata,
    optional,
    texts,
    urls,
)
from tests.unit.translators.p03.test_roundtrip_p03 import (
    SETTINGS,
    encodings,
    norm,
    over_the_wire,
    p10,
)
from translators.loss import LossReport
from translators.p03 import card
from translators.protojson import dump_p10

# ====================================================================== agent card


@st.composite
def security_schemes_p10(draw: st.DrawFn) -> JSON:
    # OAuth2 twice as often: its flows hold the two fields v0.3 lacks.
    kind = draw(st.sampled_from(["apiKey", "http", "oauth2", "oauth2", "oidc", "mtls"]))
    body: JSON = {}
    optional(draw, body, "description", labels)
    if kind == "apiKey":
        body.update(location=draw(st.sampled_from(["header", "query"])), name=draw(ids))
        return {"apiKeySecurityScheme": body}
    if kind == "http":
        body["scheme"] = draw(st.sampled_from(["Bearer", "Basic"]))
        optional(draw, body, "bearerFormat", ids)
        return {"httpAuthSecurityScheme": body}
    if kind == "oidc":
        body["openIdConnectUrl"] = draw(urls)
        return {"openIdConnectSecurityScheme": body}
    if kind == "mtls":
        return {"mtlsSecurityScheme": body}
    flow_kind = draw(st.sampled_from(["authorizationCode", "deviceCode", "authorizationCode",
                                      "clientCredentials", "implicit", "password"]))
    flow: JSON = {"tokenUrl": draw(urls)} if flow_kind != "implicit" else {}
    if flow_kind in ("authorizationCode", "implicit"):
        flow["authorizationUrl"] = draw(urls)
    if flow_kind == "authorizationCode":
        flow["pkceRequired"] = draw(st.booleans())
    if flow_kind == "deviceCode":
        flow["deviceAuthorizationUrl"] = draw(urls)
    optional(draw, flow, "refreshUrl", urls)
    optional(draw, flow, "scopes", st.dictionaries(meta_keys, texts, min_size=1, max_size=2))
    body["flows"] = {flow_kind: flow}
    optional(draw, body, "oauth2MetadataUrl", urls)
    return {"oauth2SecurityScheme": body}


requirements = st.lists(st.dictionaries(meta_keys, st.lists(ids, max_size=2).map(
    lambda scopes: {"list": scopes}), min_size=1, max_size=2).map(lambda s: {"schemes": s}),
    min_size=1, max_size=2)


@st.composite
def cards_p10(draw: st.DrawFn) -> JSON:
    card_: JSON = {"name": draw(labels), "description": draw(labels), "version": draw(ids),
                   "defaultInputModes": draw(st.lists(media_types, max_size=2)),
                   "defaultOutputModes": draw(st.lists(media_types, max_size=2))}
    interfaces = []
    for url in draw(st.lists(urls, unique=True, max_size=3)):
        iface = {"url": url, "protocolBinding": draw(st.sampled_from(["JSONRPC", "GRPC",
                                                                       "HTTP+JSON"])),
                 "protocolVersion": draw(st.sampled_from(["0.3", "1.0"]))}
        optional(draw, iface, "tenant", ids)
        interfaces.append(iface)
    card_["supportedInterfaces"] = interfaces
    if draw(st.booleans()):
        caps: JSON = {}
        for key in ("streaming", "pushNotifications", "extendedAgentCard"):
            optional(draw, caps, key, st.booleans())
        optional(draw, caps, "extensions", st.lists(st.builds(
            lambda uri, req, params: {"uri": uri, "required": req, "params": params},
            urls, st.booleans(), metadata), max_size=2))
        card_["capabilities"] = caps
    optional(draw, card_, "provider", st.builds(lambda u, o: {"url": u, "organization": o},
                                                urls, labels))
    optional(draw, card_, "documentationUrl", urls)
    optional(draw, card_, "iconUrl", urls)
    card_["securitySchemes"] = draw(st.dictionaries(meta_keys, security_schemes_p10(),
                                                    max_size=4))
    optional(draw, card_, "securityRequirements", requirements)
    optional(draw, card_, "skills", st.lists(st.builds(
        lambda i, n, tags, reqs: {"id": i, "name": n, "description": "d", "tags": tags,
                                  "securityRequirements": reqs},
        ids, labels, st.lists(ids, max_size=2), requirements), max_size=2))
    optional(draw, card_, "signatures", st.lists(st.builds(
        lambda p, s, h: {"protected": p, "signature": s, "header": h}, ids, ids, metadata),
        min_size=1, max_size=2))
    return card_


def expect_card(card_: JSON, lost: list[str]) -> JSON:
    out = copy.deepcopy(card_)
    if out.pop("signatures", None):  # a JWS covers one shape of the card only
        lost.append("signatures")
    for i, iface in enumerate(out["supportedInterfaces"]):
        if iface.pop("tenant", None):
            lost.append(f"supportedInterfaces[{i}].tenant")
        if iface["protocolVersion"] != "0.3":  # a v0.3 card speaks for 0.3 only
            iface["protocolVersion"] = "0.3"
            lost.append(f"supportedInterfaces[{i}].protocolVersion")
    caps = out.setdefault("capabilities", {})
    for key in ("streaming", "pushNotifications", "extendedAgentCard"):
        caps.setdefault(key, False)  # v0.3 booleans have no presence
    for name, scheme in out.get("securitySchemes", {}).items():
        flows = scheme.get("oauth2SecurityScheme", {}).get("flows", {})
        where = f"securitySchemes.{name}.oauth2SecurityScheme.flows"
        if flows.pop("deviceCode", None) is not None:
            lost.append(f"{where}.deviceCode")
        if flows.get("authorizationCode", {}).pop("pkceRequired", False):
            lost.append(f"{where}.authorizationCode.pkceRequired")
    return out


@SETTINGS
@given(cards_p10(), encodings)
def test_card_roundtrip(card_: JSON, encoding: str) -> None:
    loss = LossReport()
    sent = card.card_to_p03(p10(card_, pb.AgentCard), loss)
    back = card.card_to_p10(over_the_wire(sent, encoding), loss)
    lost: list[str] = []
    assert dump_p10(back) == norm(expect_card(card_, lost), pb.AgentCard)
    assert sorted(loss.request) == sorted(lost)
