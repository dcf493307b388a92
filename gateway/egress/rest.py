"""HTTP+JSON backends of either version, over the shared aiohttp session.

The configured `url` is the backend's base without a version prefix: the route table
adds `/v1` for v0.3 and the tenant prefix for a v1.0 backend with a tenant.
"""

from __future__ import annotations

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
from translators import operations as ops
from translators import rest
from translators.errors import A2AError
from translators.json_text import dumps, parse_json
from translators.rest_errors import error_from_rest
from translators.rest_routes import Route, route_for
from translators.versions import V10


class RestBackend:
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession,
                 p03_options: dict[str, Any]) -> None:
        self.config = config
        # A backend is built from a resolved config: discovery filled these in.
        assert config.url is not None and config.version is not None
        self.url: str = config.url
        self.version: str = config.version
        self._session = session
        self._base = self.url.rstrip("/")
        self._options = p03_options

    def _request(self, call: Call, route: Route) -> tuple[str, dict[str, str], Any]:
        request = call.request
        if self.version == V10 and hasattr(request, "tenant"):
            request = type(request)()
            request.CopyFrom(call.request)
            request.tenant = ""  # carried by the path
        variables, query, body = rest.request_from_canonical(route, request, call.ctx.loss,
                                                             **self._options)
        prefix = f"/{self.config.tenant}" if self.version == V10 and \
            self.config.tenant else ""
        return self._base + prefix + route.path_for(variables), query, body

    def _send(self, call: Call, route: Route, *, stream: bool,
              ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        url, query, body = self._request(call, route)
        headers = backend_headers(call, self.config)
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if stream:
            query["alt"] = "sse"  # gRPC-transcoding front ends answer arrays without it
        data = None
        if body is not None or route.verb == "POST":
            # `{}` rather than no body: some peers refuse an empty or null one (§2).
            data = dumps(body if body is not None else {})
            headers["content-type"] = "application/json"
        return backend_request(self._session, self.config, call, route.verb, url,
                               stream=stream, params=query, data=data, headers=headers)

    async def _json(self, call: Call, resp: aiohttp.ClientResponse) -> Any:
        check_proxy_page(call, self.config, resp)
        raw = await read_capped(call, self.config, resp)
        if resp.status >= 400:
            try:
                body = parse_json(raw).value if raw.strip() else None
            except A2AError:
                body = None  # an error page that is not JSON: the status says enough
            raise error_from_rest(resp.status, body)
        return json_answer(call, self.config, raw) if raw.strip() else {}

    def _routes(self, op: str) -> list[Route]:
        """The routes to try: subscribe tries the configured verb, then the other (§2)."""
        if op != ops.SUBSCRIBE:
            return [route_for(op, self.version)]
        first = self.config.subscribe_verb
        second = "GET" if first == "POST" else "POST"
        return [route_for(op, self.version, first),
                route_for(op, self.version, second)]

    async def unary(self, call: Call) -> ProtoMessage | None:
        route = self._routes(call.op.name)[0]
        async with self._send(call, route, stream=False) as resp:
            data = await self._json(call, resp)
        return rest.result_to_canonical(call.op, self.version, data, call.ctx.loss,
                                        call.request, **self._options)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        routes = self._routes(call.op.name)
        for attempt, route in enumerate(routes):
            async with self._send(call, route, stream=True) as resp:
                if resp.status == 405 and attempt + 1 < len(routes):
                    continue
                if not is_event_stream(resp):
                    await self._json(call, resp)  # raises the backend's error, if it sent one
                    raise bad_response(call, self.config, "expected an event stream, got "
                                       f"{resp.headers.get('content-type', 'no content type')!r}")
                async for event in sse_events(self.config, resp):
                    data = json_answer(call, self.config, event.data, "a stream event")
                    if event.event == "error":
                        raise rest.stream_error(data)
                    yield rest.stream_item_to_canonical(self.version, data,
                                                        call.ctx.loss, **self._options)
                return

    async def close(self) -> None:
        return None
