"""The six dialects of A2A — {JSON-RPC, HTTP+JSON, gRPC} x {v0.3, v1.0} — one object
each, in one registry (after grpc-gateway's marshaler registry).

Each binding module (jsonrpc, rest, grpc) holds its two dialects and a `decode_call`
front door that reads a client's request, picks the dialect it speaks and decodes it.
The contract all six keep is typed in `contract.py`; the gateway's I/O side picks a
dialect here, by (binding, version), and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from translators.dialects import grpc, jsonrpc, rest
from translators.dialects.contract import BINDINGS, Binding
from translators.dialects.grpc import GRPC, GrpcDialect
from translators.dialects.jsonrpc import JSONRPC, JsonRpcDialect
from translators.dialects.rest import HTTP_JSON, RestDialect
from translators.versions import Version, as_version

AnyDialect = JsonRpcDialect | RestDialect | GrpcDialect

DIALECTS: Mapping[tuple[Binding, Version], AnyDialect] = MappingProxyType({
    **{(JSONRPC, v): d for v, d in jsonrpc.ROWS.items()},
    **{(HTTP_JSON, v): d for v, d in rest.ROWS.items()},
    **{(GRPC, v): d for v, d in grpc.ROWS.items()},
})


def dialect_for(binding: str, version: str) -> AnyDialect:
    """The registry's row for a configured or declared (binding, version)."""
    for key in DIALECTS:
        if key == (binding, version):
            return DIALECTS[key]
    raise ValueError(f"no dialect {binding} {version}")


__all__ = ["BINDINGS", "DIALECTS", "GRPC", "HTTP_JSON", "JSONRPC", "AnyDialect", "Binding",
           "Version", "as_version", "dialect_for"]
