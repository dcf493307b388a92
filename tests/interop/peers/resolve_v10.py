"""a2a-sdk 1.3.0 client that knows only the gateway's URL: it resolves the agent card
with the SDK's resolver, lets ClientFactory pick the interface for --transport, and
sends one message. Prints one JSON object: the card as the SDK read it and the reply.

    .venvs/sdk13/bin/python tests/interop/peers/resolve_v10.py --base URL --transport T
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from uuid import uuid4

import grpc
import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest


async def main(base: str, transport: str) -> dict[str, object]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
    config = ClientConfig(streaming=False, supported_protocol_bindings=[transport],
                          grpc_channel_factory=grpc.aio.insecure_channel)
    client = ClientFactory(config).create(card)
    request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=uuid4().hex,
                                                 parts=[Part(text="hello")]))
    reply = None
    async for response in client.send_message(request):
        if response.HasField("message"):
            reply = response.message.parts[0].text
    await client.close()
    return {"name": card.name,
            "interfaces": [[i.protocol_binding, i.protocol_version, i.url, i.tenant]
                           for i in card.supported_interfaces],
            "reply": reply}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--transport", required=True)
    args = parser.parse_args()
    try:
        out = asyncio.run(main(args.base, args.transport))
    except Exception as exc:  # errors are data for the test
        out = {"error": f"{type(exc).__name__}: {exc}"}
    json.dump(out, sys.stdout)
