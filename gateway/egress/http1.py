"""Unary exchanges with a plain-http backend over pooled HTTP/1.1 keep-alive connections.

aiohttp's client costs a call about as much CPU as everything else the gateway does for it
(bench/README.md, "Backend client"): a session request builds a dozen objects, a timer
context and a response wrapper. A unary exchange needs far less: write one request, read
one answer. This module does only that, for `http://` backends: the request head is one
string, the answer is read by aiohttp's own HTTP parser (llhttp: status line, headers,
Content-Length, chunked, until-close bodies), and the connection goes back to the pool
for the next call. Everything else — TLS, streams — stays on aiohttp's session
(gateway/egress/http.py).

Bounds are the session's: the exchange's total time (connect included), the connect
time, the answer's size (`max_answer_bytes`, refused as it arrives), idle connections
closed after KEEPALIVE seconds. A connection that saw anything unexpected (a timeout, a
cancelled call, a malformed or oversized answer, `Connection: close`) is closed, never
reused. A request is never sent twice: a POST that failed on a reused connection fails
(as with aiohttp), and a connection the backend has closed while idle is not reused.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from aiohttp import StreamReader
from multidict import CIMultiDictProxy
from yarl import URL

from gateway.http.aiohttp_internals import ParsedConnection, RawResponseMessage, body_bytes_read

# An idle connection is closed after this long, under the keep-alive of the servers
# agents run on (uvicorn, the a2a-sdk's: 5 s): a POST is never sent twice, so one written
# on a connection the backend closes at that moment fails (aiohttp's 15 s met that race
# once in 8,000 calls of `make bench` against an SDK agent). At most MAX_IDLE wait per
# backend, the rest are closed when their exchange ends.
KEEPALIVE = 4.0
MAX_IDLE = 256
_LINE = 8190  # the longest status or header line an answer may have (aiohttp's default)
# Names the exchange writes itself: a configured or forwarded one never replaces them.
_OWN = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_FORBIDDEN = re.compile(r"[\r\n\x00]")  # in a header: would split the request
# Methods whose request says `Content-Length: 0` when it has no body (as aiohttp's do).
_SENDS_BODY = frozenset({"POST", "PUT", "PATCH"})
Query = Mapping[str, str] | Sequence[tuple[str, str]]


class AnswerTooLarge(Exception):
    """The answer is larger than the exchange's limit."""


class NotConnected(ConnectionError):
    """The connection could not be opened: nothing of the request was sent."""


class BadAnswer(ConnectionError):
    """What the backend sent is not an HTTP/1.1 answer."""


@dataclass(slots=True)
class Answer:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    @property
    def content_type(self) -> str:
        """The media type alone, lower case (aiohttp's default when there is none)."""
        raw = self.headers.get("content-type")
        if not raw:
            return "application/octet-stream"
        return raw.partition(";")[0].strip().lower()


class _Connection(ParsedConnection):
    """One keep-alive connection; one exchange at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = self.response_parser(loop, _LINE)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[tuple[RawResponseMessage, StreamReader]] | None = None
        self._message: RawResponseMessage | None = None
        self._payload: StreamReader | None = None
        self._limit = 0
        self._surplus = False
        # The exchange's deadline: one timer per connection, re-armed only when it fires
        # before the exchange then under way is due (a timer made and cancelled per call
        # cost as much as the rest of the exchange's bookkeeping).
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass).
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.connected = False
        if self._waiter is None or self._waiter.done():
            return
        try:  # an answer without a length ends with the connection
            self._parser.feed_eof()
        except Exception as error:
            self._fail(BadAnswer(str(error) or type(error).__name__))
            return
        if self._message is not None and self._payload is not None and self._payload.is_eof():
            self._waiter.set_result((self._message, self._payload))
        else:
            self._fail(ConnectionError(str(exc) if exc else "the backend closed the "
                                       "connection before its answer was complete"))

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            self.close()  # nothing was asked: the connection is not in a known state
            return
        try:
            messages, _, _ = self._parser.feed_data(data)
        except Exception as error:
            self._fail(BadAnswer(str(error) or type(error).__name__))
            return
        for message, payload in messages:
            if message.code < 200:
                continue  # informational: the answer follows
            if self._message is None:
                self._message, self._payload = message, payload
            else:  # more than was asked: the connection is out of step, not reused
                self._surplus = True
        answer, body = self._message, self._payload
        if answer is None or body is None:
            return
        if body_bytes_read(body) > self._limit:
            self._fail(AnswerTooLarge())
        elif body.is_eof():
            waiter.set_result((answer, body))

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport is not None:
            self.transport.close()

    def _check_deadline(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None or self._waiter is None:
            return  # between exchanges: the next one arms it again
        if self._loop.time() >= deadline:
            self._fail(TimeoutError())
        else:  # a later exchange's deadline
            self._timer = self._loop.call_at(deadline, self._check_deadline)

    async def exchange(self, request: bytes, limit: int, deadline: float | None) -> Answer:
        """Write ``request``, wait for the whole answer. The connection is closed unless
        the exchange ended cleanly and the backend keeps it open."""
        assert self.transport is not None
        self._message = self._payload = None
        self._limit = limit
        self._waiter = waiter = self._loop.create_future()
        self._deadline = deadline
        if deadline is not None:
            if self._timer is None:
                self._timer = self._loop.call_at(deadline, self._check_deadline)
            elif self._timer.when() > deadline:  # sooner than the one armed
                self._timer.cancel()
                self._timer = self._loop.call_at(deadline, self._check_deadline)
        clean = False
        try:
            self.transport.write(request)
            message, payload = await waiter
            body = payload.read_nowait()
            clean = not (message.should_close or self._surplus)
            return Answer(message.code, message.headers, body)
        finally:
            self._deadline = None
            self._waiter = None
            if not clean:
                self.close()  # cancelled, failed or `Connection: close`


class Http1Pool:
    """The keep-alive connections to one `http://` backend."""

    def __init__(self, url: str) -> None:
        parsed = URL(url)
        if parsed.scheme != "http" or not parsed.host:
            raise ValueError(f"not a plain-http URL: {url}")
        self.host = parsed.host
        self.port = parsed.port or 80
        self._host_header = parsed.raw_authority
        self._target = parsed.raw_path_qs or "/"
        self._base = url.rstrip("/")
        self._idle: list[_Connection] = []
        self._sweep: asyncio.TimerHandle | None = None
        self._closed = False

    @staticmethod
    def supports(url: str) -> bool:
        return url.startswith("http://")

    def target(self, path: str, query: Query = ()) -> str:
        """The request target of ``path`` (below the pool's URL) and ``query``, encoded as
        aiohttp's session would."""
        url = URL(self._base + path)
        return (url.extend_query(query) if query else url).raw_path_qs

    def request_head(self, method: str, target: str, headers: dict[str, str],
                     length: int | None) -> bytes:
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        for name, value in headers.items():
            if name.lower() in _OWN:
                continue
            line = f"{name}: {value}\r\n"
            # One search for name and value (": " holds none of the characters).
            if _FORBIDDEN.search(line, 0, len(line) - 2):
                raise ValueError(f"header {name[:40]!r} has a line break or NUL in it")
            lines.append(line)
        lines.append("\r\n" if length is None else f"Content-Length: {length}\r\n\r\n")
        return "".join(lines).encode("utf-8", "surrogateescape")

    async def request(self, method: str, target: str | None, headers: dict[str, str],
                      body: bytes | None, *, limit: int, total: float | None,
                      connect: float) -> Answer:
        """One exchange (``target``: the request target, from :meth:`target`; None: the
        pool's URL); TimeoutError after ``total`` seconds (connecting included),
        ConnectionError/OSError when the backend cannot be reached or breaks off,
        AnswerTooLarge past ``limit`` bytes of body."""
        length = len(body) if body is not None else 0 if method in _SENDS_BODY else None
        head = self.request_head(method, self._target if target is None else target, headers,
                                 length)
        request = head if body is None else head + body
        loop = asyncio.get_running_loop()
        deadline = None if total is None else loop.time() + total
        conn = self._take(loop)
        if conn is None:
            wait = connect if deadline is None else min(connect, deadline - loop.time())
            try:
                _, conn = await asyncio.wait_for(
                    loop.create_connection(lambda: _Connection(loop), self.host, self.port),
                    max(wait, 0.0))
            except OSError as exc:  # not TimeoutError (one too): a timeout stays one
                if isinstance(exc, TimeoutError):
                    raise
                raise NotConnected(exc.errno, str(exc) or type(exc).__name__) from exc
            assert conn is not None
        answer = await conn.exchange(request, limit, deadline)
        self._give_back(conn, loop)
        return answer

    def _take(self, loop: asyncio.AbstractEventLoop) -> _Connection | None:
        oldest = loop.time() - KEEPALIVE
        while self._idle:
            conn = self._idle.pop()  # the most recent: the warmest
            if not conn.closed and conn.idle_since > oldest:
                return conn
            conn.close()
        return None

    def _give_back(self, conn: _Connection, loop: asyncio.AbstractEventLoop) -> None:
        if conn.closed:
            return
        if self._closed or len(self._idle) >= MAX_IDLE:
            conn.close()
            return
        conn.idle_since = loop.time()
        self._idle.append(conn)
        if self._sweep is None:
            self._sweep = loop.call_later(KEEPALIVE, self._close_stale, loop)

    def _close_stale(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        oldest = loop.time() - KEEPALIVE
        keep = []
        for conn in self._idle:
            if conn.closed or conn.idle_since <= oldest:
                conn.close()
            else:
                keep.append(conn)
        self._idle = keep
        if keep:
            self._sweep = loop.call_later(KEEPALIVE, self._close_stale, loop)

    def close(self) -> None:
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for conn in self._idle:
            conn.close()
        self._idle.clear()
