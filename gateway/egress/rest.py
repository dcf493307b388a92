"""HTTP+JSON backends of either version, over the shared aiohttp session: the exchange is
HTTP; the route, path, query and body, and how the answer reads, are the dialect's.

The configured `url` is the backend's base without a version prefix: the route table
adds `/v1` for v0.3 and the tenant prefix for a v1.0 backend with a tenant.
"""

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
from gateway.egress.http1 import Http1Pool, Query
from translators.dialects.base import WireAnswer
from translators.dialects.rest import REST_V03, REST_V10, BackendCall, RestDialect
from translators.versions import V10


class RestBackend:
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.dialect: RestDialect = REST_V10 if config.version == V10 else REST_V03
        self._session = session
        self._base = self.url.rstrip("/")
        # Unary calls to a plain-http backend: its own keep-alive pool (http1.py).
        self._pool = Http1Pool(self.url) if Http1Pool.supports(self.url) else None

    def _calls(self, call: Call, stream: bool) -> list[BackendCall]:
        return self.dialect.backend_calls(call.op, call.request, call.ctx.loss,
                                          self.config.tenant, stream=stream,
                                          subscribe_verb=self.config.subscribe_verb,
                                          card=call.backend_card,
                                          extensions=call.ctx.facts.extensions)

    def _headers(self, call: Call, *, stream: bool, body: bool) -> dict[str, str]:
        headers = backend_headers(call, self.config)
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if body:
            headers["content-type"] = "application/json"
        return headers

    def _send(self, call: Call, out: BackendCall, *, stream: bool,
              ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        return backend_request(self._session, self.config, call, out.verb, self._base + out.path,
                               stream=stream, params=out.query, data=out.body,
                               headers=self._headers(call, stream=stream,
                                                     body=out.body is not None))

    async def _exchange(self, call: Call, verb: str, path: str, query: Query,
                        body: bytes | None) -> tuple[int, str, bytes]:
        """One unary exchange: the answer's status, media type and body."""
        answer = await unary_exchange(self._session, self._pool, self.config, call, verb,
                                      self._base, path, query,
                                      self._headers(call, stream=False, body=body is not None),
                                      body)
        return answer.status, answer.content_type, answer.body

    async def _answer(self, call: Call, resp: aiohttp.ClientResponse) -> ProtoMessage | None:
        check_proxy_page(call, self.config, resp.status, resp.content_type)
        raw = await read_capped(call, self.config, resp)
        return self.dialect.read_answer(call.op, resp.status, raw, call.ctx.loss, call.request)

    async def unary(self, call: Call) -> ProtoMessage | None:
        out = self._calls(call, False)[0]
        status, _, raw = await self._exchange(call, out.verb, out.path, out.query, out.body)
        return self.dialect.read_answer(call.op, status, raw, call.ctx.loss, call.request)

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        """The client's own request, to a backend of its dialect; a JSON result as it
        comes. An error (rare) is read as a translated answer is, so that it is logged,
        counted and rendered the one way errors are."""
        wire = call.wire
        assert wire is not None
        status, content_type, raw = await self._exchange(call, wire.verb, wire.path,
                                                         wire.query, wire.body or None)
        document = self.dialect.forwarded(status, content_type, raw)
        if document is not None:
            return WireAnswer(raw, status, document)
        return self.dialect.read_answer(call.op, status, raw, call.ctx.loss, call.request)

    async def stream(self, call: Call) -> EventBatches:
        tries = self._calls(call, True)
        for attempt, out in enumerate(tries):
            async with self._send(call, out, stream=True) as resp:
                if resp.status == 405 and attempt + 1 < len(tries):
                    continue
                if not is_event_stream(resp):
                    await self._answer(call, resp)  # raises the backend's error, if it sent one
                    raise not_an_event_stream(call, self.config, resp)
                reader = self.dialect.event_reader(call.ctx.loss, call.request,
                                                   self.config.max_answer_bytes)
                async for events in read_events(resp, reader):
                    yield events
                return

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
