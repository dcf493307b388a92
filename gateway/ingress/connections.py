"""Guarding the HTTP listener's connections: a cap on how many are open, a deadline for
each request's headers, and an idle keep-alive timeout.

aiohttp bounds neither the time a client may take to send its headers nor how many
connections it keeps; a few thousand silent connections (slowloris) would hold file
descriptors until every call fails. Each connection's protocol is wrapped here: it is
either waiting for a request's headers (bounded by `limits.header_timeout`), busy with a
request (the handler's own bounds apply: body, backend, write timeouts), or idle between
requests (bounded by `limits.idle_timeout`). At the cap, a new connection evicts the
oldest one that is waiting for headers or idle; when every connection is busy, the new
one is answered 503 and closed. The listener itself keeps accepting throughout.
"""

from __future__ import annotations

import asyncio
import json
import resource
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from aiohttp import web
from prometheus_client import Counter, Gauge

from gateway.config.models import LimitsConfig
from gateway.http.aiohttp_internals import ProtocolSite, lose_keeping_handler
from gateway.http.request import ClientRequest
from gateway.streams.turns import Opening, Openings

OPEN_CONNECTIONS = Gauge("a2a_gateway_open_connections", "HTTP connections open now",
                         multiprocess_mode="livesum")
CLOSED_CONNECTIONS = Counter("a2a_gateway_connections_closed_total",
                             "HTTP connections the gateway closed, by reason", ["reason"])

# File descriptors kept for everything that is not a client connection (backends' cards,
# the relay, logs, the gRPC listener...).
_RESERVED_FDS = 128
_WAITING, _BUSY, _IDLE = "waiting", "busy", "idle"


def raise_open_files_limit() -> int:
    """Raise the soft open-files limit to the hard one; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def default_max_connections() -> int:
    """Half of what the open-files limit leaves (a proxied call may hold two descriptors:
    the client's and the backend's)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10000
    return max(16, (soft - _RESERVED_FDS) // 2)


def _refusal() -> bytes:
    body = json.dumps({"error": {
        "code": 503, "status": "UNAVAILABLE",
        "message": "the gateway is at its connection limit (limits.max_connections); "
                   "retry later"}}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")
    return head.encode() + body


class ConnectionGuard:
    """The connections of one listener, by state, oldest first."""

    def __init__(self, limits: LimitsConfig, openings: Openings | None = None) -> None:
        self.limits = limits
        self.openings = openings  # requests begin here; their answer's first byte ends them
        self.max_connections = limits.max_connections or default_max_connections()
        self.closing = False  # the gateway is shutting down: no connection stays open
        self.server: web.Server | None = None  # aiohttp's, once a site serves through it
        self._by_state: dict[str, OrderedDict[GuardedProtocol, None]] = {
            _WAITING: OrderedDict(), _BUSY: OrderedDict(), _IDLE: OrderedDict()}

    def __len__(self) -> int:
        return sum(len(d) for d in self._by_state.values())

    def close_idle(self) -> None:
        """At shutdown, once the listener stopped accepting: close the connections that
        wait for a request or idle (no new call comes on them while the streams drain)."""
        self.closing = True
        for state in (_WAITING, _IDLE):
            for conn in list(self._by_state[state]):
                conn.close("shutdown")

    async def drain(self, grace: float) -> None:
        """:meth:`close_idle`, and give the busy ones up to ``grace`` seconds to answer;
        each closes once answered (:attr:`GuardedProtocol.closing`). What is still busy
        then is closed, which cancels its call."""
        self.close_idle()
        deadline = asyncio.get_running_loop().time() + grace
        while self._by_state[_BUSY] and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self._by_state[_BUSY]):
            conn.close("shutdown")

    def factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: GuardedProtocol(self, inner)

    def _admit(self) -> bool:
        if len(self) < self.max_connections:
            return True
        for state in (_WAITING, _IDLE):
            if self._by_state[state]:
                oldest = next(iter(self._by_state[state]))
                oldest.close(f"evicted_{state}")
                return True
        return False

    def _move(self, conn: GuardedProtocol, old: str | None, new: str | None) -> None:
        if old is not None:
            self._by_state[old].pop(conn, None)
        if new is not None:
            self._by_state[new][conn] = None


class GuardedProtocol(asyncio.Protocol):
    """aiohttp's protocol for one connection, wrapped with the guard's timers."""

    def __init__(self, guard: ConnectionGuard, inner: Callable[[], asyncio.Protocol]) -> None:
        self._guard = guard
        self._make_inner = inner
        self._loop = asyncio.get_running_loop()  # made by the loop's server, on its thread
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._state: str | None = None
        # The header deadline: one timer per connection, re-armed only when it fires
        # early (a keep-alive connection's requests move the deadline; a timer made and
        # cancelled per request cost more than the rest of the guard).
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._opening: Opening | None = None
        # What the connection's loss does instead of cancelling its call (aiohttp's
        # handler cancellation): a journaled stream's, read on without its client.
        self.on_lost: Callable[[], None] | None = None

    # ---------------------------------------------------------------- states

    def _enter(self, state: str | None) -> None:
        self._guard._move(self, self._state, state)
        self._state = state
        if state is None and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _wait_for_headers(self) -> None:
        self._enter(_WAITING)
        loop = self._loop
        self._deadline = loop.time() + self._guard.limits.header_timeout
        if self._timer is None:
            self._timer = loop.call_at(self._deadline, self._header_deadline)

    def _header_deadline(self) -> None:
        self._timer = None
        if self._state != _WAITING:
            return  # the headers came; the next request arms it again
        loop = self._loop
        if loop.time() >= self._deadline:
            self.close(f"{_WAITING}_timeout")
        else:  # a later request's deadline
            self._timer = loop.call_at(self._deadline, self._header_deadline)

    def request_started(self) -> None:
        """A request's headers are in: the handler's own bounds apply from here."""
        if self._state is not None:
            self._enter(_BUSY)

    def answered(self) -> None:
        """The answer's first byte is written (a stream's first event, or the whole answer)."""
        opening, self._opening = self._opening, None
        if opening is not None and self._guard.openings is not None:
            self._guard.openings.end(opening)

    @property
    def closing(self) -> bool:
        """Whether the connection is to close after its answer (shutdown)."""
        return self._guard.closing

    def request_finished(self) -> None:
        self.answered()
        # Idle from here (aiohttp's keep-alive timeout, set to limits.idle_timeout, closes
        # it after the response is written); the next request's first byte starts the
        # header deadline.
        if self._state is not None:
            self._enter(_IDLE)

    def close(self, reason: str) -> None:
        if self._transport is not None and not self._transport.is_closing():
            CLOSED_CONNECTIONS.labels(reason).inc()
            self._transport.close()
        self._enter(None)

    # ---------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass).
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        if not self._guard._admit():
            CLOSED_CONNECTIONS.labels("refused_at_cap").inc()
            transport.write(_refusal())
            transport.close()
            return
        OPEN_CONNECTIONS.inc()
        self._wait_for_headers()
        self._inner = self._make_inner()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return
        if self._state == _IDLE:  # a new request begins: its headers have a deadline
            self._wait_for_headers()
        if self._state == _WAITING and self._opening is None and self._guard.openings is not None:
            # The open streams let it go first.
            self._opening = self._guard.openings.begin(self._loop.time())
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.answered()
        self._enter(None)
        if self._inner is not None:
            OPEN_CONNECTIONS.dec()
            inner, self._inner = self._inner, None
            on_lost, self.on_lost = self.on_lost, None
            server = self._guard.server
            if on_lost is None or server is None:
                inner.connection_lost(exc)
            else:
                lose_keeping_handler(server, lambda: inner.connection_lost(exc))
                on_lost()

    @property
    def keeps_handlers(self) -> bool:
        """Whether a call on this connection can outlive it in its handler (:attr:`on_lost`)."""
        return self._guard.server is not None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()


def connection_of(request: ClientRequest) -> GuardedProtocol | None:
    """The guard's protocol of the connection ``request`` came on (None without a guard)."""
    transport = request.transport
    protocol: Any = transport.get_protocol() if transport is not None else None
    return protocol if isinstance(protocol, GuardedProtocol) else None


def answer_started(request: web.Request) -> None:
    """The request's answer has begun: it no longer goes before the open streams."""
    conn = connection_of(request)
    if conn is not None:
        conn.answered()


@web.middleware
async def track_requests(request: web.Request,
                         handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    """Tell the request's connection when its headers are in and when it is done."""
    conn = connection_of(request)
    if conn is not None:
        conn.request_started()
    try:
        response: web.StreamResponse = await handler(request)
        return response
    finally:
        if conn is not None:
            conn.request_finished()


class GuardedSite(ProtocolSite):
    """A TCP site whose connections go through a :class:`ConnectionGuard`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, guard: ConnectionGuard,
                 lane: Callable[[web.Server], Callable[[], asyncio.Protocol]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(runner, host, port, **kwargs)
        self.guard = guard
        self._lane = lane  # what serves a connection before (or instead of) aiohttp

    def protocol(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        self.guard.server = server
        return self.guard.factory(server if self._lane is None else self._lane(server))
