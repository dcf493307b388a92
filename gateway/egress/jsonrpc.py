"""JSON-RPC backends of either version, over one pooled aiohttp session."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import structlog
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_headers, bad_response
from gateway.egress.http import backend_request
from gateway.sse import read_sse
from translators import jsonrpc as rpc
from translators.errors import error_from_jsonrpc

log = structlog.get_logger("a2a_gateway.egress")



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
        if self.version == "1.0" and hasattr(request, "tenant"):
            # The client's tenant picked this backend; the backend gets its own, if any.
            request = type(request)()
            request.CopyFrom(call.request)
            request.tenant = self.config.tenant or ""  # type: ignore[attr-defined]
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
        assert self.url is not None
        return backend_request(self._session, self.config, call, "POST", self.url,
                               stream=stream, data=json.dumps(body), headers=headers)

    async def _json(self, resp: aiohttp.ClientResponse) -> Any:
        raw = await resp.read()
        try:
            data = json.loads(raw)
        except ValueError:
            raise bad_response(self.config, f"HTTP {resp.status}, body is not JSON") from None
        return data

    def _result(self, data: Any, *, empty_ok: bool = False) -> Any:
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            raise bad_response(self.config, "not a JSON-RPC 2.0 response")
        if "error" in data:
            raise error_from_jsonrpc(data["error"])
        # a2a-sdk 0.3.26 answers a successful push-config delete with no `result` at all.
        if "result" not in data and not empty_ok:
            raise bad_response(self.config, "JSON-RPC response without result or error")
        return data.get("result")

    async def unary(self, call: Call) -> ProtoMessage | None:
        body = self._envelope(call)
        async with self._post(call, body, stream=False) as resp:
            data = await self._json(resp)
        result = self._result(data, empty_ok=call.op.response is None)
        return rpc.result_to_canonical(call.op, self.version, result,
                                       call.ctx.loss, call.request)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        body = self._envelope(call)
        async with self._post(call, body, stream=True) as resp:
            ctype = resp.headers.get("content-type", "")
            if not ctype.startswith("text/event-stream"):
                # Errors before the first event come back as a plain JSON-RPC response.
                self._result(await self._json(resp))
                raise bad_response(self.config, f"expected an event stream, got {ctype!r}")
            async for event in read_sse(resp.content):
                try:
                    data = json.loads(event.data)
                except ValueError:
                    raise bad_response(self.config, "stream event is not JSON") from None
                yield rpc.stream_item_to_canonical(self.version, self._result(data),
                                                   call.ctx.loss)

    async def close(self) -> None:
        return None

