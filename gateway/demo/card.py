"""The demo agent's agent cards: J03 (v0.3), and with `--protocol 1.0` the same cards the
v1.0 way (P10), translated by the gateway's own card translator."""

from __future__ import annotations

from gateway.demo.wire import JSON
from translators.j03.cards import card_to_p10
from translators.loss import LossReport
from translators.versions import V10

NAME = "a2a-gateway demo agent"
VERSION = "0.1.0"

_SKILLS: list[JSON] = [
    {
        "id": "echo",
        "name": "Echo",
        "description": "Any other text is answered with a direct Message 'echo: <text>'.",
        "tags": ["demo", "message"],
        "examples": ["hello"],
    },
    {
        "id": "task",
        "name": "Task",
        "description": "'task: X' completes a task with artifact 'result': text 'built X', "
        "a file part 'blob.bin' and a data part {\"k\": 1}.",
        "tags": ["demo", "task", "artifact"],
        "examples": ["task: a birdhouse"],
        "outputModes": ["text/plain", "application/octet-stream", "application/json"],
    },
    {
        "id": "stream",
        "name": "Stream",
        "description": "'stream: N' (N defaults to 3) streams N artifact chunks 'chunk 0' to "
        "'chunk N-1' about 50 ms apart, then completes.",
        "tags": ["demo", "streaming"],
        "examples": ["stream: 3"],
    },
    {
        "id": "input",
        "name": "Input",
        "description": "'input: X' asks 'From where?' (input-required); a follow-up message "
        "on the same task completes it with 'X from <answer>'.",
        "tags": ["demo", "multi-turn"],
        "examples": ["input: coffee"],
    },
    {
        "id": "slow",
        "name": "Slow",
        "description": "'slow' keeps a task working for 30 seconds unless it is canceled.",
        "tags": ["demo", "cancel"],
        "examples": ["slow"],
    },
]

_SECRET_SKILL: JSON = {
    "id": "secret-skill",
    "name": "Secret skill",
    "description": "Only listed on the authenticated extended card; it does nothing else.",
    "tags": ["demo", "extended-card"],
}


_DESCRIPTION = (
    "Built-in A2A {} JSON-RPC agent that ships with a2a-gateway, "
    "so the gateway has something to bridge to out of the box."
)


def public_card(url: str) -> JSON:
    return {
        "name": NAME,
        "description": _DESCRIPTION.format("v0.3"),
        "url": url,
        "version": VERSION,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": True, "pushNotifications": True},
        "supportsAuthenticatedExtendedCard": True,
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [dict(skill) for skill in _SKILLS],
    }


def extended_card(url: str) -> JSON:
    card = public_card(url)
    card["skills"].append(dict(_SECRET_SKILL))
    return card


def as_v10(card: JSON) -> JSON:
    """A J03 card of ours as the v1.0 agent serves it: one interface, JSON-RPC, 1.0.

    The translator marks interfaces from a v0.3 card as 0.3 (what such a card speaks);
    this agent speaks 1.0 at the same URL, so the interface says so.
    """
    p10 = card_to_p10(card, LossReport())
    p10["description"] = _DESCRIPTION.format("v1.0")
    for interface in p10["supportedInterfaces"]:
        interface["protocolVersion"] = V10
    return p10
