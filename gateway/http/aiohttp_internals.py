"""Every use the gateway makes of aiohttp beyond its documented API, in one place.

aiohttp's documented API (``aiohttp.web``, ``aiohttp.abc``, the client session and its
exceptions) does not cover what the gateway's own HTTP/1.1 layers need: the fast lane
(gateway/ingress/fast_lane.py) answers plain calls itself and must answer as aiohttp
would, and the keep-alive client (gateway/egress/http1.py) reads answers with aiohttp's
parser. Those needs are met here, and only here, from aiohttp's internal modules and
private attributes; tests/unit/gateway/http/test_aiohttp_internals.py pins each of them,
so an aiohttp release that moves one fails that test by name instead of a call at run
time. The supported range is pinned in pyproject.toml (README "aiohttp versions").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from aiohttp import StreamReader, web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import SINGLETON_HEADERS, HttpResponseParser, RawResponseMessage

if TYPE_CHECKING:
    from aiohttp.base_protocol import BaseProtocol

__all__ = [
    "SERVER_SOFTWARE",
    "SINGLETON_HEADERS",
    "HttpProcessingError",
    "ParsedConnection",
    "ProtocolSite",
    "RawResponseMessage",
    "body_bytes_read",
    "http_date",
    "lose_keeping_handler",
]

# `SERVER_SOFTWARE`: the `Server` header aiohttp's responses carry, which the fast lane
# writes too. `SINGLETON_HEADERS`: the fields (lower case) whose repetition aiohttp's
# request parser refuses with 400; the lane leaves such a request to aiohttp.
# `HttpProcessingError`: what aiohttp's parser raises on a malformed head (gateway/logs/
# setup.py quiets its log record). `RawResponseMessage`: an answer's head as the parser
# reads it (`code`, `headers`, `should_close`).


def http_date() -> str:
    """The `Date` header's value as aiohttp's writer makes it (cached per second)."""
    return rfc822_formatted_time()


def body_bytes_read(content: StreamReader) -> int:
    """How many body bytes a request's or an answer's reader has taken in so far (0 for
    a reader that keeps no count)."""
    count: int = getattr(content, "total_bytes", 0)
    return count


def lose_keeping_handler(server: web.Server, connection_lost: Callable[[], None]) -> None:
    """Run aiohttp's ``connection_lost`` for one connection of ``server`` without it
    cancelling the request's handler (the server's `handler_cancellation`, which the
    gateway turns on for every other call). aiohttp reads that setting from the server
    while the connection is lost, not when the connection is made: switched off for
    that one synchronous call, it spares only this connection's handler. A journaled
    stream's driver runs in its handler and reads on into the journal once its client is
    gone (gateway/streams/detach.py)."""
    keep = server.handler_cancellation
    server.handler_cancellation = False
    try:
        connection_lost()
    finally:
        server.handler_cancellation = keep


class ParsedConnection(asyncio.Protocol):
    """A connection whose answers aiohttp's HTTP response parser (llhttp) reads.

    The parser hands each answer's body to a StreamReader, which asks its protocol the
    little that the class attributes and the two methods below answer: reading is never
    paused (the caller bounds a body by its size as it arrives instead).
    """

    _reading_paused = False
    connected = True

    def response_parser(self, loop: asyncio.AbstractEventLoop, max_line: int,
                        ) -> HttpResponseParser:
        """A parser for this connection's answers: lines and fields up to ``max_line``
        bytes, a body without a length read until the connection closes."""
        return HttpResponseParser(cast("BaseProtocol", self), loop, 2**16,
                                  max_line_size=max_line, max_field_size=max_line,
                                  read_until_eof=True)

    def pause_reading(self) -> None:
        return None

    def resume_reading(self, resume_parser: bool = True) -> None:
        return None


class ProtocolSite(web.TCPSite):
    """A TCP site whose connections' protocol the subclass makes (:meth:`protocol`),
    over aiohttp's server for the runner. aiohttp's site has no hook for that: its
    `start` is redone here from the settings it keeps in private attributes."""

    def protocol(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        return server

    async def start(self) -> None:
        await web.BaseSite.start(self)  # what TCPSite.start's super() call does
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        self._server = await loop.create_server(
            self.protocol(server), self._host, self._port, ssl=self._ssl_context,
            backlog=self._backlog, reuse_address=self._reuse_address,
            reuse_port=self._reuse_port)
        sockets = self._server.sockets
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._port
