"""SDK-agnostic driver of the security interop tests (tests/interop/test_auth_interop.py).

Each attempt builds a fresh SDK client that authenticates the way that SDK does (see
auth_client.py), makes one call (or a burst of calls), and
reports the answer or the refusal as the client saw it: the SDK's error plus the
transport status underneath it (HTTP status and headers, or the gRPC status code and
trailers). Standard library only but for the SDK's CredentialService; prints one JSON
object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
import urllib.request
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from _client_common import NOT_FOUND_TASK_ID, TRANSPORTS

HEADER_OF = {"bearer": "authorization", "apiKey": "x-api-key"}


@dataclass
class PeerAuth:
    """One credential, and the gateway's card (its securitySchemes drive the SDK)."""

    scheme: str  # a scheme name of the gateway's card: "bearer" or "apiKey"
    credential: str
    card: dict[str, Any]

    def credential_service(self) -> Any:
        """This credential as the SDK's CredentialService (both SDKs name it alike), for
        its AuthInterceptor."""
        from a2a.client.auth import CredentialService

        scheme, credential = self.scheme, self.credential

        class OneCredential(CredentialService):  # type: ignore[misc]
            async def get_credentials(self, security_scheme_name: str,
                                      context: Any) -> str | None:
                return credential if security_scheme_name == scheme else None

        return OneCredential()

    @property
    def headers(self) -> dict[str, str]:
        """The same credential as plain headers, for transports whose SDK takes headers
        (or gRPC metadata) rather than card-driven interceptors."""
        value = f"Bearer {self.credential}" if self.scheme == "bearer" else self.credential
        return {HEADER_OF[self.scheme]: value}


def probe_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="security interop probe")
    parser.add_argument("--http", required=True, help="the gateway's HTTP base URL")
    parser.add_argument("--grpc", required=True, help="the gateway's gRPC host:port")
    parser.add_argument("--transport", required=True, choices=TRANSPORTS)
    parser.add_argument("--attempts", required=True, help="JSON list of attempts")
    return parser.parse_args()


def peer_address(args: argparse.Namespace, tenant: str) -> tuple[str, str | None]:
    """(url, tenant to name in the call): the tenant is in the path over HTTP, in the
    call (v1.0 field / v0.3 metadata) over gRPC."""
    if args.transport == "GRPC":
        return args.grpc, tenant
    return f"{args.http}/{tenant}", None


def fetch_card(http: str, tenant: str, version: str) -> dict[str, Any]:
    url = f"{http}/{tenant}/.well-known/agent-card.json"
    request = urllib.request.Request(url, headers={"A2A-Version": version})
    with urllib.request.urlopen(request, timeout=10) as resp:
        card: dict[str, Any] = json.loads(resp.read())
    return card


def transport_status(exc: BaseException) -> dict[str, Any]:
    """What the transport said under an SDK error: HTTP status and headers (httpx), or
    the gRPC status code and trailers, found along the exception's causes."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:  # the transport's own answer, deepest knowledge first
        response = getattr(error, "response", None)
        if response is not None and hasattr(response, "status_code"):
            headers = response.headers
            return {"status": response.status_code,
                    "retryAfter": headers.get("retry-after"),
                    "wwwAuthenticate": headers.get("www-authenticate")}
        code = getattr(error, "code", None)
        if callable(code) and hasattr(error, "trailing_metadata"):
            trailers = dict(error.trailing_metadata() or ())
            return {"status": code().name, "retryAfter": trailers.get("retry-after")}
    statuses = [s for s in (getattr(e, "status_code", None) for e in chain)
                if isinstance(s, int)]
    return {"status": statuses[0] if statuses else None}


MakePeer = Callable[[PeerAuth | None, str], AbstractAsyncContextManager[Any]]


async def _one(peer: Any, op: str, describe: Callable[[BaseException], dict[str, Any]],
               ) -> dict[str, Any]:
    try:
        if op == "send":
            got = await peer.send("hello")
            return {"ok": True, "text": got.get("text")}
        if op == "get_task":
            got = await peer.get_task(NOT_FOUND_TASK_ID)
            return {"ok": True, "state": got.get("state")}
        raise ValueError(f"unknown op {op}")
    except Exception as exc:  # refusals are data
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": describe(exc), **transport_status(exc)}


async def run_probe(make_peer: MakePeer, card_of: Callable[[str], dict[str, Any]],
                    attempts: list[dict[str, Any]],
                    describe: Callable[[BaseException], dict[str, Any]]) -> None:
    """Each attempt: {"label", "tenant", "scheme"?, "credential"?, "op": send|get_task,
    "count"? (a burst), "pause"? (seconds, then one call more)}."""
    results: dict[str, Any] = {}
    for attempt in attempts:
        tenant = attempt["tenant"]
        auth = (PeerAuth(attempt["scheme"], attempt["credential"], card_of(tenant))
                if attempt.get("scheme") else None)
        async with make_peer(auth, tenant) as peer:
            calls = [await _one(peer, attempt["op"], describe)
                     for _ in range(attempt.get("count", 1))]
            if attempt.get("pause"):
                await asyncio.sleep(attempt["pause"])
                calls.append(await _one(peer, attempt["op"], describe))
        results[attempt["label"]] = calls if len(calls) > 1 else calls[0]
    sys.stdout.write(json.dumps(results, sort_keys=True) + "\n")
    sys.stdout.flush()
