"""Backends over HTTP — JSON-RPC and HTTP+JSON, either version — over the shared aiohttp
session (and, for plain-http unary calls, the backend's own keep-alive pool, http1.py):
the exchange is HTTP; what is sent (verb, path, query, body) and how the answer reads are
the backend's dialect's (translators/dialects, contract.BackendCodec)."""

from __future__ import annotations

from collections.abc import Awaitable

import aiohttp
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.egress.base import EventBatches, backend_codec, backend_headers, passed_through
from gateway.egress.http import (
    backend_request,
    check_proxy_page,
    is_event_stream,
    not_an_event_stream,
    read_capped,
    read_events,
    unary_exchange,
)
from gateway.egress.http1 import Answer, Http1Pool
from translators.dialects import dialect_for
from translators.dialects.base import WireAnswer, WireRequest
from translators.dialects.contract import Dialect


class HttpBackend:
    """One backend over HTTP; ``base`` is what the dialect's request paths go below."""

    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession,
                 base: str) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.dialect: Dialect = dialect_for(config.binding, config.version)
        self._session = session
        self._base = base
        # Unary calls to a plain-http backend: its own keep-alive pool (http1.py).
        self._pool = Http1Pool(self.url) if Http1Pool.supports(self.url) else None

    def _headers(self, call: Call, *, stream: bool, body: bool) -> dict[str, str]:
        headers = backend_headers(call, self.config)
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if body:
            headers["content-type"] = "application/json"
        return headers

    def _exchange(self, call: Call, out: WireRequest) -> Awaitable[Answer]:
        """One unary exchange: the answer's status, media type and body."""
        return unary_exchange(self._session, self._pool, self.config, call, out.verb,
                              self._base, out.path, out.query,
                              self._headers(call, stream=False, body=bool(out.body)),
                              out.body or None)

    async def unary(self, call: Call) -> ProtoMessage | None:
        codec = backend_codec(call, self)
        answer = await self._exchange(call, codec.requests[0])
        return codec.read(answer.status, answer.body)

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        """The client's own request, to a backend of its dialect; a result as it comes."""
        codec = backend_codec(call, self, forward=True)
        answer = await self._exchange(call, codec.requests[0])
        return passed_through(codec, answer.status, answer.content_type, answer.body)

    async def stream(self, call: Call) -> EventBatches:
        codec = backend_codec(call, self)
        tries = codec.requests
        for attempt, out in enumerate(tries):
            async with backend_request(
                    self._session, self.config, call, out.verb, self._base + out.path,
                    stream=True, params=out.query or None, data=out.body or None,
                    headers=self._headers(call, stream=True, body=bool(out.body))) as resp:
                if resp.status == 405 and attempt + 1 < len(tries):
                    continue  # HTTP+JSON's subscribe: the other verb (peers disagree on it)
                if not is_event_stream(resp):
                    # Errors before the first event come back as a plain answer.
                    check_proxy_page(call, self.config, resp.status, resp.content_type)
                    codec.read(resp.status, await read_capped(call, self.config, resp))
                    raise not_an_event_stream(call, self.config, resp)
                async for events in read_events(resp, codec.events(self.config.max_answer_bytes)):
                    yield events
                return

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
