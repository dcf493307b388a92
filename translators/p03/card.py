"""Agent card: v0.3 proto card ⇄ v1.0 proto card (reference §4.2-§4.4, §6.3).

This is the card v0.3 gRPC `GetAgentCard` answers with. (v0.3 REST `/v1/card` and the
well-known card are J03 on every binding, reference §4.1: see translators/j03/cards.py.)
The security schemes, OAuth flows, skills, extensions and signatures kept their field
names, so they are copied by name; the interface fields and the extended-card flag are
restructured here. Signatures are not: a JWS covers one shape of the card (§4.6).
"""

from __future__ import annotations

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from translators.loss import LossReport
from translators.p03.mirror import copy_by_name
from translators.versions import V03, V03_CARD_VERSION, normalize_version

# `security` became `security_requirements` on the card and on each skill (§4.2).
_RENAMES_TO_P10 = {"security": "security_requirements"}
_RENAMES_TO_P03 = {v: k for k, v in _RENAMES_TO_P10.items()}
# Translated by hand below: the interface fields, the extended-card flag, capabilities.
_V03_RESTRUCTURED = frozenset({"url", "preferred_transport", "additional_interfaces",
                               "protocol_version", "supports_authenticated_extended_card",
                               "capabilities", "signatures"})
_P10_RESTRUCTURED = frozenset({"supported_interfaces", "capabilities", "signatures"})


def card_to_p10(card: v03.AgentCard, loss: LossReport) -> pb.AgentCard:
    out = pb.AgentCard()
    copy_by_name(card, out, "", loss, renames=_RENAMES_TO_P10, skip=_V03_RESTRUCTURED)
    if card.signatures:  # a JWS covers one shape of the card only (§4.6)
        loss.drop("signatures")
    # v1.0 interfaces carry Major.Minor only (§4.2): `0.3.0` → `0.3`; none said → 0.3.
    version = normalize_version(card.protocol_version)
    # The preferred interface comes first in v1.0 (§4.2); v0.3 cards usually repeat it
    # among the additional ones.
    interfaces: list[pb.AgentInterface] = []
    if card.url:
        interfaces.append(pb.AgentInterface(
            url=card.url, protocol_binding=card.preferred_transport or "JSONRPC",
            protocol_version=version))
    for extra in card.additional_interfaces:
        entry = pb.AgentInterface(url=extra.url, protocol_binding=extra.transport,
                                  protocol_version=version)
        if entry not in interfaces:
            interfaces.append(entry)
    out.supported_interfaces.extend(interfaces)
    caps = out.capabilities
    copy_by_name(card.capabilities, caps, "capabilities", loss)
    # v0.3 booleans have no presence: false is what the peer declared, so say it.
    caps.streaming = card.capabilities.streaming
    caps.push_notifications = card.capabilities.push_notifications
    caps.extended_agent_card = card.supports_authenticated_extended_card
    return out


def card_for_v03(card: pb.AgentCard, loss: LossReport) -> v03.AgentCard:
    """The card a v0.3 gRPC client is served: only the v0.3 interfaces, since a v0.3 card
    cannot say which of its entries speak 1.0."""
    return card_to_p03(card, loss, versions=(V03,))


def card_to_p03(card: pb.AgentCard, loss: LossReport, *,
                versions: tuple[str, ...] = ()) -> v03.AgentCard:
    """A v1.0 card as v0.3 gRPC clients read it. ``versions`` limits which interfaces
    appear (by protocolVersion, e.g. ``("0.3",)``); by default all do, the first being
    `url`. An interface v0.3 cannot describe (another protocol version, a tenant) is
    reported."""
    out = v03.AgentCard(protocol_version=V03_CARD_VERSION)
    copy_by_name(card, out, "", loss, renames=_RENAMES_TO_P03, skip=_P10_RESTRUCTURED)
    if card.signatures:
        loss.drop("signatures")
    chosen = [(i, iface) for i, iface in enumerate(card.supported_interfaces)
              if not versions or iface.protocol_version in versions]
    for n, (i, iface) in enumerate(chosen):
        if n == 0:
            out.url = iface.url
            out.preferred_transport = iface.protocol_binding
        out.additional_interfaces.add(url=iface.url, transport=iface.protocol_binding)
        where = f"supportedInterfaces[{i}]"
        if iface.tenant:
            loss.drop(f"{where}.tenant")
        if iface.protocol_version and normalize_version(iface.protocol_version) != V03:
            loss.drop(f"{where}.protocolVersion")
    out.capabilities.SetInParent()  # required in both versions
    copy_by_name(card.capabilities, out.capabilities, "capabilities", loss,
                 skip=frozenset({"extended_agent_card"}))
    out.supports_authenticated_extended_card = card.capabilities.extended_agent_card
    return out
