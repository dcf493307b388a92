"""JSON-RPC backends of either version, over one pooled aiohttp session: the exchange is
HTTP; what goes in it, and how the answer reads, is the backend's dialect's."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import aiohttp
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.egress.base import EventBatches, backend_headers
from gateway.egress.http import (
    backend_request,
    check_proxy_page,
    is_event_stream,
    not_an_event_stream,
    read_capped,
    read_events,
    unary_exchange,
)
from gateway.egress.http1 import Http1Pool
from translators.dialects.base import WireAnswer
from translators.dialects.jsonrpc import JSONRPC_V03, JSONRPC_V10, JsonRpcDialect
from translators.versions import V10


class JsonRpcBackend:
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.dialect: JsonRpcDialect = JSONRPC_V10 if config.version == V10 else JSONRPC_V03
        self._session = session
        # Unary calls to a plain-http backend: its own keep-alive pool (http1.py).
        self._pool = Http1Pool(self.url) if Http1Pool.supports(self.url) else None

    def _headers(self, call: Call, *, stream: bool) -> dict[str, str]:
        headers = backend_headers(call, self.config)
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream" if stream else "application/json"
        return headers

    def _post(self, call: Call, body: bytes, *, stream: bool,
              ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        return backend_request(self._session, self.config, call, "POST", self.url,
                               stream=stream, data=body,
                               headers=self._headers(call, stream=stream))

    async def _exchange(self, call: Call, body: bytes) -> tuple[int, bytes]:
        """One unary exchange: the answer's status and body."""
        answer = await unary_exchange(self._session, self._pool, self.config, call, "POST",
                                      self.url, "", (), self._headers(call, stream=False), body)
        return answer.status, answer.body

    async def unary(self, call: Call) -> ProtoMessage | None:
        body, sent_id = self.dialect.call_body(call.op, call.request, call.ctx.loss,
                                               self.config.tenant, call.backend_card,
                                               call.ctx.facts.extensions)
        _, raw = await self._exchange(call, body)
        return self.dialect.read_answer(call.op, raw, sent_id, call.ctx.loss, call.request)

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        """The client's own document, to a backend of its dialect; a result as it comes.
        An error (rare) is read as a translated answer is, so that it is logged, counted
        and rendered the one way errors are."""
        assert call.wire is not None
        status, raw = await self._exchange(call, call.wire.body)
        sent_id = call.wire.rpc_id
        document = self.dialect.forwarded(raw, sent_id) if status == 200 else None
        if document is not None:
            return WireAnswer(raw, document=document)
        return self.dialect.read_answer(call.op, raw, sent_id, call.ctx.loss, call.request)

    async def stream(self, call: Call) -> EventBatches:
        body, sent_id = self.dialect.call_body(call.op, call.request, call.ctx.loss,
                                               self.config.tenant, call.backend_card,
                                               call.ctx.facts.extensions)
        async with self._post(call, body, stream=True) as resp:
            if not is_event_stream(resp):
                # Errors before the first event may come back as a plain JSON-RPC response.
                check_proxy_page(call, self.config, resp.status, resp.content_type)
                raw = await read_capped(call, self.config, resp)
                self.dialect.read_answer(call.op, raw, sent_id, call.ctx.loss, call.request)
                raise not_an_event_stream(call, self.config, resp)
            reader = self.dialect.event_reader(sent_id, call.ctx.loss, call.request,
                                               self.config.max_answer_bytes)
            async for events in read_events(resp, reader):
                yield events

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
