"""The security probe (_auth_probe.py) with the a2a-sdk 0.3.26 client.

    .venvs/sdk03/bin/python tests/interop/peers/auth_client_v03.py --http URL \\
        --grpc HOST:PORT --transport JSONRPC|HTTP+JSON|GRPC --attempts JSON
"""

from __future__ import annotations

import asyncio
import json

from _auth_probe import PeerAuth, fetch_card, peer_address, probe_args, run_probe
from client_v03 import V03Peer, describe_error


async def main() -> None:
    args = probe_args()

    def make_peer(auth: PeerAuth | None, tenant: str) -> V03Peer:
        url, named = peer_address(args, tenant)
        return V03Peer(url, args.transport, named, auth=auth)

    def card_of(tenant: str) -> dict[str, object]:
        return fetch_card(args.http, tenant, "0.3")

    await run_probe(make_peer, card_of, json.loads(args.attempts), describe_error)


if __name__ == "__main__":
    asyncio.run(main())
