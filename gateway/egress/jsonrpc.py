"""JSON-RPC backends of either version, over one pooled aiohttp session."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_headers, bad_response
from gateway.egress.http import (
    backend_request,
    check_proxy_page,
    is_event_stream,
    json_answer,
    read_capped,
    sse_events,
)
from translators import jsonrpc as rpc
from translators.json_text import dumps
from translators.versions import V10


class JsonRpcBackend:
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.version: str = config.version
        self._session = session
        self._ids = itertools.count(1)

    def _envelope(self, call: Call) -> dict[str, Any]:
        request = call.request
        if self.version == V10 and hasattr(request, "tenant"):
            # The client's tenant picked this backend; the backend gets its own, if any.
            request = type(request)()
            request.CopyFrom(call.request)
            request.tenant = self.config.tenant or ""
        params = rpc.params_from_canonical(call.op, self.version, request, call.ctx.loss)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids),
                                "method": rpc.method_name(call.op, self.version)}
        if params is not None:
            body["params"] = params
        return body

    def _post(self, call: Call, body: dict[str, Any], *, stream: bool,
              ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        headers = backend_headers(call, self.config)
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream" if stream else "application/json"
        return backend_request(self._session, self.config, call, "POST", self.url,
                               stream=stream, data=dumps(body), headers=headers)

    async def _answer(self, call: Call, resp: aiohttp.ClientResponse, sent_id: int) -> Any:
        """The result of a plain JSON answer (not a stream)."""
        check_proxy_page(call, self.config, resp)
        data = json_answer(call, self.config, await read_capped(call, self.config, resp))
        return rpc.read_answer(data, sent_id, empty_ok=call.op.response is None)

    async def unary(self, call: Call) -> ProtoMessage | None:
        body = self._envelope(call)
        async with self._post(call, body, stream=False) as resp:
            result = await self._answer(call, resp, body["id"])
        return rpc.result_to_canonical(call.op, self.version, result,
                                       call.ctx.loss, call.request)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        body = self._envelope(call)
        async with self._post(call, body, stream=True) as resp:
            if not is_event_stream(resp):
                # Errors before the first event may come back as a plain JSON-RPC response.
                await self._answer(call, resp, body["id"])
                raise bad_response(call, self.config, "expected an event stream, got "
                                   f"{resp.headers.get('content-type', 'no content type')!r}")
            async for event in sse_events(self.config, resp):
                data = json_answer(call, self.config, event.data, "a stream event")
                result = rpc.read_answer(data, body["id"])
                yield rpc.stream_item_to_canonical(self.version, result, call.ctx.loss)

    async def close(self) -> None:
        return None
