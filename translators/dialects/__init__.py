"""The six dialects of A2A — {JSON-RPC, HTTP+JSON, gRPC} x {v0.3, v1.0} — one object
each, in one registry (after grpc-gateway's marshaler registry).

Each binding module (jsonrpc, rest, grpc) holds its two dialects and a `decode_call`
front door that reads a client's request, picks the dialect it speaks and decodes it.
The gateway's I/O side picks a dialect here for each backend and calls it.
"""

from __future__ import annotations

from typing import Any

from translators.dialects.grpc import GRPC, GRPC_V03, GRPC_V10
from translators.dialects.jsonrpc import JSONRPC, JSONRPC_V03, JSONRPC_V10
from translators.dialects.rest import HTTP_JSON, REST_V03, REST_V10
from translators.versions import V03, V10

DIALECTS: dict[tuple[str, str], Any] = {
    (JSONRPC, V10): JSONRPC_V10, (JSONRPC, V03): JSONRPC_V03,
    (HTTP_JSON, V10): REST_V10, (HTTP_JSON, V03): REST_V03,
    (GRPC, V10): GRPC_V10, (GRPC, V03): GRPC_V03,
}

__all__ = ["DIALECTS", "GRPC", "HTTP_JSON", "JSONRPC"]
