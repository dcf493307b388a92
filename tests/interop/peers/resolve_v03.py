"""a2a-sdk 0.3.26 client that knows only the gateway's URL: it resolves the agent card
with the SDK's resolver, lets ClientFactory pick the interface for --transport, and
sends one message. Prints one JSON object: the card as the SDK read it and the reply.

    .venvs/sdk03/bin/python tests/interop/peers/resolve_v03.py --base URL --transport T
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
from a2a.types import Message, Part, Role, TextPart


async def main(base: str, transport: str) -> dict[str, object]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        config = ClientConfig(streaming=False, supported_transports=[transport],
                              httpx_client=http, grpc_channel_factory=grpc.aio.insecure_channel)
        client = ClientFactory(config).create(card)
        message = Message(role=Role.user, message_id=uuid4().hex,
                          parts=[Part(root=TextPart(text="hello"))])
        reply = None
        async for item in client.send_message(message):
            if isinstance(item, Message):
                reply = item.parts[0].root.text  # type: ignore[union-attr]
        return {"name": card.name, "url": card.url, "preferredTransport": card.preferred_transport,
                "interfaces": [[i.transport, i.url] for i in card.additional_interfaces or []],
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
