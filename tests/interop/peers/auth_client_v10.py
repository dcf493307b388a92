"""The security probe (_auth_probe.py) with the a2a-sdk 1.3.0 client.

    .venvs/sdk13/bin/python tests/interop/peers/auth_client_v10.py --http URL \\
        --grpc HOST:PORT --transport JSONRPC|HTTP+JSON|GRPC --attempts JSON
"""

from __future__ import annotations

import asyncio
import json

from _auth_probe import PeerAuth, fetch_card, peer_address, probe_args, run_probe
from client_v10 import V10Peer, describe_error


async def main() -> None:
    args = probe_args()

    def make_peer(auth: PeerAuth | None, tenant: str) -> V10Peer:
        url, named = peer_address(args, tenant)
        return V10Peer(url, args.transport, named, auth=auth)

    def card_of(tenant: str) -> dict[str, object]:
        return fetch_card(args.http, tenant, "1.0")

    await run_probe(make_peer, card_of, json.loads(args.attempts), describe_error)


if __name__ == "__main__":
    asyncio.run(main())
