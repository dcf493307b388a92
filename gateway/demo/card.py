"""The demo agent's v0.3 agent cards (J03 shape)."""

from __future__ import annotations

from gateway.demo.wire import JSON

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


def public_card(url: str) -> JSON:
    return {
        "name": NAME,
        "description": "Built-in A2A v0.3 JSON-RPC agent that ships with a2a-gateway, "
        "so the gateway has something to bridge to out of the box.",
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
