"""The card translators read a v0.3 card's protocolVersion with the one version rule,
versions.normalize_version (the one every header goes through), in both card shapes: the
J03 JSON card (every v0.3 binding's well-known card) and the P03 proto card (v0.3 gRPC).
And a v0.3 client is served only the v0.3 interfaces, in both shapes."""

from __future__ import annotations

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from translators.j03 import cards as j03_cards
from translators.loss import LossReport
from translators.p03 import card as p03_card
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03_CARD_VERSION, normalize_version

# What a v0.3 card says → the Major.Minor its interfaces say in v1.0.
CASES = [
    ("0.3.0", "0.3"), ("0.3", "0.3"), ("", "0.3"), (" 0.3.1 ", "0.3"), ("01.0", "1.0"),
    ("1.0.2", "1.0"), ("0.4.0", "0.4"), ("abc", "abc"),
]



@pytest.mark.parametrize(("said", "version"), CASES)
def test_both_card_shapes_read_the_version_alike(said: str, version: str) -> None:
    assert normalize_version(said) == version
    j03 = {"name": "a", "url": "http://a/", "preferredTransport": "JSONRPC",
           "additionalInterfaces": [{"url": "http://a/rest", "transport": "HTTP+JSON"}]}
    if said:
        j03["protocolVersion"] = said
    from_j03 = j03_cards.card_to_p10(j03, LossReport())
    from_p03 = p03_card.card_to_p10(v03.AgentCard(
        name="a", url="http://a/", preferred_transport="JSONRPC", protocol_version=said,
        additional_interfaces=[v03.AgentInterface(url="http://a/rest", transport="HTTP+JSON")]),
        LossReport())
    assert [i["protocolVersion"] for i in from_j03["supportedInterfaces"]] == [version] * 2
    assert [i.protocol_version for i in from_p03.supported_interfaces] == [version] * 2


CARD_P10 = {"name": "a", "supportedInterfaces": [
    {"url": "http://a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "http://a/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    {"url": "http://a/v03/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}]}


def test_a_v03_client_gets_only_the_v03_interfaces() -> None:
    j03 = j03_cards.card_for_v03(CARD_P10, LossReport())
    p03 = p03_card.card_for_v03(parse_p10(CARD_P10, pb.AgentCard), LossReport())
    assert j03["protocolVersion"] == p03.protocol_version == V03_CARD_VERSION == "0.3.0"
    assert (j03["url"], j03["preferredTransport"]) == ("http://a/v03", "JSONRPC")
    assert (p03.url, p03.preferred_transport) == ("http://a/v03", "JSONRPC")
    wanted = [("http://a/v03", "JSONRPC"), ("http://a/v03/rest", "HTTP+JSON")]
    assert [(i["url"], i["transport"]) for i in j03["additionalInterfaces"]] == wanted
    assert [(i.url, i.transport) for i in p03.additional_interfaces] == wanted
    # Every interface, when not asked for the v0.3 ones only (what a v1.0 card holds).
    everything = j03_cards.card_to_j03(CARD_P10, LossReport())
    assert everything["url"] == "http://a/v1" and len(everything["additionalInterfaces"]) == 3
    assert dump_p10(parse_p10(CARD_P10, pb.AgentCard)) == CARD_P10
