"""The security probe (_auth_probe.py) with the a2a-sdk client of the venv it runs in
(0.3.26 or 1.3.0):

    .venvs/sdk03/bin/python tests/interop/peers/auth_client.py --http URL \\
        --grpc HOST:PORT --transport JSONRPC|HTTP+JSON|GRPC --attempts JSON
"""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import version
from typing import Any

from _auth_probe import PeerAuth, fetch_card, peer_address, probe_args, run_probe


async def main() -> None:
    args = probe_args()
    if version("a2a-sdk").startswith("0.3"):
        from client_v03 import V03Peer as Peer
        from client_v03 import describe_error
        card_version = "0.3"
    else:
        from client_v10 import V10Peer as Peer  # type: ignore[assignment]
        from client_v10 import describe_error  # type: ignore[assignment]
        card_version = "1.0"

    def make_peer(auth: PeerAuth | None, tenant: str) -> Any:
        url, named = peer_address(args, tenant)
        return Peer(url, args.transport, named, auth=auth)

    def card_of(tenant: str) -> dict[str, Any]:
        return fetch_card(args.http, tenant, card_version)

    await run_probe(make_peer, card_of, json.loads(args.attempts), describe_error)


if __name__ == "__main__":
    asyncio.run(main())
