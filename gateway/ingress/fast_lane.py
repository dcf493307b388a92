"""The fast lane: small unary JSON-RPC calls answered without aiohttp's web layer.

Most calls a gateway serves are one small JSON-RPC `POST` whose headers and body arrive
in one read and whose answer is one small JSON body. aiohttp's server costs more per such
call (request and response objects, router, middlewares, its writer) than the gateway's
own work on a same-dialect call. So a connection starts in this lane: while its requests
are plain ones, the lane parses them itself, strictly, and runs the same JSON-RPC codec
and pipeline (gateway/ingress/jsonrpc.py) that aiohttp's route would. The first request
that is anything else hands the connection, with every byte not yet answered, to aiohttp
for good: streams, REST, cards, admin, a body that has not fully arrived, chunked bodies,
`Expect`, `Upgrade`, query strings, HTTP/1.0, or a head the lane does not parse. The lane
answers what aiohttp's route would answer; `fast_lane: false` turns it off.

The connection's guard (ingress/connections.py) keeps its header deadline and its cap;
the lane keeps aiohttp's other bounds: the idle keep-alive timeout, the body limit (a
larger body goes to aiohttp, which refuses it), cancelling a call whose client left, and
reading no further while an answer cannot be written.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import cast

import structlog
from aiohttp import web
from multidict import CIMultiDictProxy, MultiDict, MultiDictProxy
from prometheus_client import Counter

from gateway.call import CallContext
from gateway.config.models import LimitsConfig
from gateway.http.aiohttp_internals import SERVER_SOFTWARE, http_date
from gateway.ingress import jsonrpc
from gateway.ingress.common import Reply, app_gateway
from gateway.ingress.connections import GuardedProtocol, connection_of
from gateway.ingress.errors import unhandled
from gateway.ingress.lane_head import MAX_HEAD, asks_to_close, checked_until, read_request
from gateway.observability.logs import access

log = structlog.get_logger("a2a_gateway.http")

HANDOVERS = Counter("a2a_gateway_fast_lane_handovers_total", "Connections the fast lane "
                    "handed to aiohttp, by what their next request was", ["reason"])

_NO_QUERY: MultiDictProxy[str] = MultiDictProxy(MultiDict())
_REASONS = {status.value: status.phrase for status in HTTPStatus}
class LaneRequest:
    """A request the lane parsed, as the ingress reads it (gateway/http/request.py's
    ClientRequest: the strict type check holds this class to it)."""

    __slots__ = ("app", "ctx", "headers", "path", "remote", "transport")

    method = "POST"
    query = _NO_QUERY

    def __init__(self, app: web.Application, headers: CIMultiDictProxy[str],
                 transport: asyncio.Transport, path: str, remote: str | None) -> None:
        self.app = app
        self.headers = headers
        self.transport = transport
        self.path = path
        self.remote = remote  # the client's address (its connection's: remote_of)
        self.ctx: CallContext | None = None  # the call it made, for its access line

    def __setitem__(self, key: object, value: CallContext) -> None:
        self.ctx = value  # what ingress/common.client_context leaves (CALL_KEY)

    @property
    def scheme(self) -> str:
        return "https" if self.transport.get_extra_info("sslcontext") is not None else "http"

    @property
    def host(self) -> str:
        host = self.headers.get("Host")
        return host if host is not None else socket.getfqdn()  # as aiohttp's request


def remote_of(transport: asyncio.BaseTransport) -> str | None:
    """The client's address, as aiohttp's request.remote reads it from the connection."""
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple | list) and peer else None


def reply_bytes(reply: Reply, close: bool) -> bytes:
    """A codec's reply as HTTP/1.1 bytes, as aiohttp writes its response (as_response);
    ``close``: with `Connection: close`."""
    answer = reply.answer
    headers = {**reply.headers, **answer.headers, "Content-Type": answer.content_type}
    return _http_bytes(answer.status, _REASONS.get(answer.status, ""), headers.items(), answer.body,
                       close)


def response_bytes(response: web.Response, close: bool) -> bytes:
    """An aiohttp response made by code shared with aiohttp's route, as HTTP/1.1 bytes."""
    body = response.body
    if not isinstance(body, bytes):
        raise TypeError(f"the lane writes bytes bodies, not {type(body).__name__}")
    return _http_bytes(response.status, response.reason, response.headers.items(), body,
                       close)


def _http_bytes(status: int, reason: str, headers: Iterable[tuple[str, str]], body: bytes,
                close: bool) -> bytes:
    """The status line, ``headers``, and the ones aiohttp's writer adds, then ``body``."""
    lines = [f"HTTP/1.1 {status} {reason}\r\n"]
    for name, value in headers:
        if "\r" in value or "\n" in value:
            raise ValueError(f"a newline in the response header {name}")
        lines.append(f"{name}: {value}\r\n")
    lines.append(f"Content-Length: {len(body)}\r\nDate: {http_date()}\r\n"
                 f"Server: {SERVER_SOFTWARE}\r\n")
    if close:
        lines.append("Connection: close\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("utf-8") + body


class FastLane(asyncio.Protocol):
    """One client connection: plain JSON-RPC calls here, the rest handed to aiohttp."""

    def __init__(self, app: web.Application, aiohttp_protocol: Callable[[], asyncio.Protocol],
                 idle_timeout: float) -> None:
        self._app = app
        self._make_aiohttp = aiohttp_protocol
        self._idle_timeout = idle_timeout
        self._loop = asyncio.get_running_loop()  # made by the loop's server, on its thread
        self._transport: asyncio.Transport | None = None
        self._aiohttp: asyncio.Protocol | None = None
        self._buffer = bytearray()
        self._task: asyncio.Task[None] | None = None
        self._write_paused = False
        self._read_paused = False
        self._eof = False
        self._tls = False
        self._remote: str | None = None  # read once: every request of the connection has it
        self._checked = 0  # bytes at the buffer's start seen to be plain requests
        # The idle deadline: one timer, re-armed when it fires early (see connections.py).
        self._idle_since = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # ---------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._tls = transport.get_extra_info("sslcontext") is not None
        self._remote = remote_of(transport)

    def data_received(self, data: bytes) -> None:
        if self._aiohttp is not None:
            self._aiohttp.data_received(data)
            return
        self._buffer += data
        if self._task is None:
            self._next()
        elif len(self._buffer) > MAX_HEAD and not self._read_paused:
            # Pipelined requests wait for the one being served: read no further meanwhile.
            self._read_paused = True
            if self._transport is not None:
                self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        if self._aiohttp is not None:
            return self._aiohttp.eof_received()
        self._eof = True
        if self._task is None:
            self._close()
            return None
        # An answer under way is still written, then the connection closes. Not over TLS:
        # its transport cannot stay half-open (it closes, and warns in plain text on
        # stderr when asked to keep it), so there the call ends as aiohttp's would.
        return None if self._tls else True

    def connection_lost(self, exc: Exception | None) -> None:
        if self._aiohttp is not None:
            self._aiohttp.connection_lost(exc)
            return
        self._transport = None
        self._stop_timer()
        if self._task is not None:
            self._task.cancel()  # the client left: as aiohttp's handler_cancellation

    def pause_writing(self) -> None:
        if self._aiohttp is not None:
            self._aiohttp.pause_writing()
        self._write_paused = True

    def resume_writing(self) -> None:
        if self._aiohttp is not None:
            self._aiohttp.resume_writing()
            return
        self._write_paused = False
        if self._task is None:
            self._next()

    # ---------------------------------------------------------------- the lane

    def _hand_over(self, reason: str) -> None:
        transport = self._transport
        if transport is None:
            return
        HANDOVERS.labels(reason).inc()
        self._stop_timer()
        if self._read_paused:
            self._read_paused = False
            transport.resume_reading()
        protocol = self._aiohttp = self._make_aiohttp()
        protocol.connection_made(transport)
        if self._write_paused:
            protocol.pause_writing()
        data, self._buffer = bytes(self._buffer), bytearray()
        if data:
            protocol.data_received(data)
        if self._eof:
            protocol.eof_received()

    def _next(self) -> None:
        buffer = self._buffer
        if not buffer or self._write_paused or self._transport is None:
            return
        max_body = app_gateway(self._app).config.max_body_bytes
        request = read_request(buffer, 0, max_body)
        if request is None:
            return
        if isinstance(request, str):
            self._hand_over(request)
            return
        # Pipelined requests: aiohttp's parser answers a read with one refused request in
        # it by one 400 for the whole read, so such a read is aiohttp's from its start.
        checked = checked_until(buffer, max(request.end, self._checked))
        if checked is None:
            self._hand_over("not_plain")
            return
        self._checked = checked - request.end
        del buffer[:request.end]
        lane_request = LaneRequest(self._app, request.headers, self._transport, request.path,
                                   self._remote)
        self._task = self._loop.create_task(self._serve(lane_request, request.head,
                                                        request.body))

    async def _serve(self, request: LaneRequest, head: bytes, body: bytes) -> None:
        conn = connection_of(request)
        if conn is not None:
            conn.request_started()
        written = False
        try:
            try:
                reply = await jsonrpc.serve_unary(request, request.path.strip("/") or None,
                                                  body)
                close = reply.closes or self._closes_after(request, conn)
                data = reply_bytes(reply, close)
                status = reply.answer.status
            except jsonrpc.StreamNotServed:
                # A streaming method its body did not name plainly (JSON escapes): aiohttp
                # serves it from its first byte.
                self._buffer[:0] = head + b"\r\n" + body
                self._hand_over("stream")
                return
            except Exception as exc:  # as the answer_in_dialect middleware does
                response = unhandled(request, exc)
                close = response.keep_alive is False or self._closes_after(request, conn)
                data = response_bytes(response, close)
                status = response.status
            if self._transport is not None:
                self._transport.write(data)
                written = not close
            self._access_line(request, status, len(body), len(data))
        except Exception as exc:  # a bug of ours: this connection ends, the worker serves on
            log.error("unhandled error in the fast lane", path=request.path[:200],
                      exc_info=exc)
        finally:
            self._task = None
            if conn is not None:
                conn.request_finished()
        if not written:
            self._close()
            return
        if self._read_paused and self._transport is not None:
            self._read_paused = False
            self._transport.resume_reading()
        self._idle()
        self._next()

    def _access_line(self, request: LaneRequest, status: int, size_in: int, size_out: int,
                     ) -> None:
        """The request's access line (gateway/observability/logs/access.py), as aiohttp's
        hook writes it."""
        ctx = request.ctx
        if self._transport is None:  # the client left before its answer
            status, size_out = access.CLIENT_CLOSED, 0
        access.write(ctx, request.remote, status, size_in, size_out,
                     time.monotonic() - ctx.facts.started if ctx else 0.0, "POST", request.path)

    def _closes_after(self, request: LaneRequest, conn: GuardedProtocol | None) -> bool:
        """Whether the connection ends with this answer: the client asked, or sent its
        end, or the gateway is shutting down."""
        return (self._eof or (conn is not None and conn.closing)
                or asks_to_close(request.headers))

    # ---------------------------------------------------------------- idle and close

    def _idle(self) -> None:
        loop = self._loop
        self._idle_since = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(self._idle_since + self._idle_timeout, self._idle_check)

    def _idle_check(self) -> None:
        self._timer = None
        if self._aiohttp is not None or self._transport is None:
            return
        if self._task is not None or self._buffer:
            return  # busy, or a request is coming: the guard bounds that
        loop = self._loop
        deadline = self._idle_since + self._idle_timeout
        if loop.time() >= deadline:
            self._close()
        else:
            self._timer = loop.call_at(deadline, self._idle_check)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        self._stop_timer()
        if self._transport is not None:
            self._transport.close()


def lane_for(app: web.Application, limits: LimitsConfig,
             ) -> Callable[[web.Server], Callable[[], asyncio.Protocol]]:
    """What GuardedSite wraps: a lane per connection over aiohttp's ``server``."""
    def over(server: web.Server) -> Callable[[], asyncio.Protocol]:
        return lambda: FastLane(app, server, limits.idle_timeout)
    return over
