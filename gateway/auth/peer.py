"""The verified client certificate of a connection, in the form :mod:`gateway.auth.mtls`
reads, for the two kinds of listener. Only certificates the TLS layer verified count:
Python's `getpeercert()` dict is empty for an unverified one, and gRPC lists
`x509_pem_cert` only for a peer it verified against the client CA."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.auth.mtls import PeerCert


def http_peer_cert(transport: Any) -> PeerCert:
    """From an aiohttp request's ``request.transport`` (None on a plaintext listener)."""
    if transport is None:
        return None
    cert = transport.get_extra_info("peercert")
    return cert if isinstance(cert, dict) and cert else None


def grpc_peer_cert(auth_context: Mapping[str, Sequence[bytes]]) -> PeerCert:
    """From ``ServicerContext.auth_context()`` of a gRPC call."""
    pems = auth_context.get("x509_pem_cert") or ()
    first = pems[0] if pems else None
    return first if isinstance(first, bytes) and first else None
