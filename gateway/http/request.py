"""What the ingress reads from a client's HTTP request, as a type.

Two kinds of request reach the same ingress code: aiohttp's `web.Request` and the fast
lane's `LaneRequest` (gateway/ingress/fast_lane.py), which parses plain calls itself.
:class:`ClientRequest` is the cut-off between them: code typed with it may read only
what both give, and the strict type check holds each kind to it (no cast), so a new
``request.xyz`` in shared ingress code fails the type check, not the lane at run time.
What only aiohttp's request gives (the body's reader, the route's match, a response to
stream on) stays typed `web.Request`.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from aiohttp import web
from multidict import CIMultiDictProxy, MultiMapping

from gateway.call import CallContext


class ClientRequest(Protocol):
    """A client's request, its head read: the fields both request kinds give."""

    @property
    def app(self) -> web.Application: ...

    @property
    def method(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def headers(self) -> CIMultiDictProxy[str]: ...

    @property
    def query(self) -> MultiMapping[str]: ...

    @property
    def transport(self) -> asyncio.Transport | None: ...

    @property
    def scheme(self) -> str: ...

    @property
    def host(self) -> str: ...

    @property
    def remote(self) -> str | None: ...

    def __setitem__(self, key: web.RequestKey[CallContext], value: CallContext) -> None:
        """Keeps the call the request made, for its access line (gateway/logs/access.py)."""
