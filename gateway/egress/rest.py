"""HTTP+JSON backends of either version, over the shared aiohttp session.

The configured `url` is the backend's base without a version prefix: the route table
adds `/v1` for v0.3 and the tenant prefix for a v1.0 backend with a tenant.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_headers, bad_response
from gateway.egress.http import backend_request
from gateway.sse import read_sse
from translators import operations as ops
from translators import rest
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
            request.tenant = ""  # type: ignore[attr-defined]  # carried by the path
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
            data = json.dumps(body if body is not None else {})
            headers["content-type"] = "application/json"
        return backend_request(self._session, self.config, call, route.verb, url,
                               stream=stream, params=query, data=data, headers=headers)

    async def _json(self, resp: aiohttp.ClientResponse) -> Any:
        raw = await resp.read()
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            if resp.status >= 400:
                raise error_from_rest(resp.status, None) from None
            raise bad_response(self.config, f"HTTP {resp.status}, body is not JSON") from None
        if resp.status >= 400:
            raise error_from_rest(resp.status, data)
        return data

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
            data = await self._json(resp)
        return rest.result_to_canonical(call.op, self.version, data, call.ctx.loss,
                                        call.request, **self._options)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        routes = self._routes(call.op.name)
        for attempt, route in enumerate(routes):
            async with self._send(call, route, stream=True) as resp:
                if resp.status == 405 and attempt + 1 < len(routes):
                    continue
                if not resp.headers.get("content-type", "").startswith("text/event-stream"):
                    await self._json(resp)  # raises the backend's error, if it sent one
                    raise bad_response(self.config, "expected an event stream")
                async for event in read_sse(resp.content):
                    try:
                        data = json.loads(event.data)
                    except ValueError:
                        raise bad_response(self.config, "stream event is not JSON") from None
                    if event.event == "error":
                        raise error_from_rest(500, data)
                    yield rest.stream_item_to_canonical(self.version, data,
                                                        call.ctx.loss, **self._options)
                return

    async def close(self) -> None:
        return None
