"""What every backend client offers the pipeline, and the headers all of them send."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig
from translators.errors import A2AError, a2a_error
from translators.versions import V10


class Backend(Protocol):
    config: BackendConfig

    async def unary(self, call: Call) -> ProtoMessage | None: ...

    def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]: ...

    async def close(self) -> None: ...


def backend_headers(call: Call, config: BackendConfig) -> dict[str, str]:
    """Headers for one backend call: configured ones, forwarded ones, version, extensions."""
    headers = dict(config.headers)
    headers.update(call.ctx.forward_headers)
    headers["x-request-id"] = call.ctx.request_id
    if config.version == V10:
        # py@HEAD reads a missing header as 0.3 and refuses v1.0 methods (reference §1).
        headers["a2a-version"] = V10
    if call.ctx.extensions:
        value = ",".join(call.ctx.extensions)
        headers["a2a-extensions"] = value
        if config.version != V10:
            headers["x-a2a-extensions"] = value
    return headers


def backend_unavailable(config: BackendConfig, detail: str) -> A2AError:
    where = config.url or config.card
    return a2a_error("BackendUnavailableError", f"backend {where} unavailable: {detail}",
                     backend=where)


def backend_timeout(config: BackendConfig, seconds: float) -> A2AError:
    return a2a_error("BackendTimeoutError",
                     f"backend {config.url} did not answer within {seconds:g}s",
                     backend=config.url)


def bad_response(config: BackendConfig, detail: str) -> A2AError:
    return a2a_error("InvalidAgentResponseError",
                     f"backend {config.url} sent an invalid response: {detail}",
                     backend=config.url)
