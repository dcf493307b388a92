"""What the gateway relies on beyond aiohttp's documented API (gateway/http/
aiohttp_internals.py), each pinned against the aiohttp installed: an aiohttp release
that moves one fails the test named for it here, not a call at run time. The supported
range is pyproject.toml's; `make test-aiohttp-range` runs this file (and the lane's,
the keep-alive client's and an interop smoke) against its oldest and newest release."""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import AsyncIterator, Callable
from email.utils import parsedate_to_datetime

import aiohttp
import pytest
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from gateway.egress import http1
from gateway.http.aiohttp_internals import (
    SERVER_SOFTWARE,
    SINGLETON_HEADERS,
    HttpProcessingError,
    ParsedConnection,
    ProtocolSite,
    body_bytes_read,
    http_date,
    lose_keeping_handler,
)
from gateway.ingress import lane_head

_BAD = re.compile(rb"HTTP/1\.[01] 400 ")  # aiohttp answers a head it cannot read as 1.0
_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")


class _Counting(asyncio.Protocol):
    """Wraps aiohttp's protocol for one connection and counts the connections."""

    made = 0

    def __init__(self, inner: asyncio.Protocol) -> None:
        self._inner = inner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        _Counting.made += 1
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._inner.connection_lost(exc)


class _Site(ProtocolSite):
    def protocol(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        return lambda: _Counting(server())


@pytest.fixture
async def site() -> AsyncIterator[tuple[_Site, list[int]]]:
    """A real aiohttp app behind a ProtocolSite on a free loopback port; the list holds
    the body sizes its handler read (body_bytes_read)."""
    sizes: list[int] = []

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        sizes.append(body_bytes_read(request.content))
        return web.Response(body=body)

    app = web.Application()
    app.router.add_post("/", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    started = _Site(runner, "127.0.0.1", 0)
    await started.start()
    yield started, sizes
    await runner.cleanup()


def _port(site: ProtocolSite) -> int:
    return int(site.name.rpartition(":")[2])


async def _raw(port: int, data: bytes) -> bytes:
    """The answer to ``data`` sent as is: up to the connection's end (bounded)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()


async def test_protocol_site_serves_through_its_protocol_on_the_port_it_bound(
        site: tuple[_Site, list[int]]) -> None:
    started, sizes = site
    port = _port(started)
    assert port > 0  # the bound port, not the 0 asked for (TCPSite's private _bound_port)
    before = _Counting.made
    async with aiohttp.ClientSession() as session, session.post(
            f"http://127.0.0.1:{port}/", data=b"x" * 1000) as resp:
        assert resp.status == 200
        assert await resp.read() == b"x" * 1000
    assert _Counting.made == before + 1
    assert sizes == [1000]  # StreamReader.total_bytes, as the access line reads it


async def test_server_software_and_http_date_are_what_aiohttp_answers_with(
        site: tuple[_Site, list[int]]) -> None:
    async with aiohttp.ClientSession() as session, session.post(
            f"http://127.0.0.1:{_port(site[0])}/", data=b"{}") as resp:
        assert resp.headers["Server"] == SERVER_SOFTWARE
        theirs = resp.headers["Date"]
    ours = http_date()
    assert _DATE.fullmatch(theirs) and _DATE.fullmatch(ours)
    assert abs((parsedate_to_datetime(ours) - parsedate_to_datetime(theirs)).total_seconds()) < 60


def test_singleton_headers_are_the_lower_case_names_the_lane_checks() -> None:
    assert isinstance(SINGLETON_HEADERS, frozenset)
    assert all(name == name.lower() for name in SINGLETON_HEADERS)
    assert {"host", "content-length", "content-type", "transfer-encoding"} <= SINGLETON_HEADERS


async def test_aiohttp_refuses_each_singleton_header_repeated(
        site: tuple[_Site, list[int]]) -> None:
    """The lane leaves a head with one of them twice to aiohttp because aiohttp refuses it."""
    port = _port(site[0])
    for name in sorted(SINGLETON_HEADERS - {"host", "content-length", "transfer-encoding"}):
        head = (f"POST / HTTP/1.1\r\nHost: a\r\n{name}: 1\r\n{name}: 2\r\n"
                f"Content-Length: 2\r\nConnection: close\r\n\r\n{{}}").encode()
        answer = await _raw(port, head)
        assert _BAD.match(answer) and b"Duplicate" in answer, (name, answer[:200])
    for name, value in (("Host", "b"), ("Content-Length", "2")):
        head = (f"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n{name}: {value}\r\n"
                f"Connection: close\r\n\r\n{{}}").encode()
        answer = await _raw(port, head)
        assert _BAD.match(answer) and b"Duplicate" in answer, (name, answer[:200])


async def test_a_malformed_head_is_logged_with_an_http_processing_error(
        site: tuple[_Site, list[int]]) -> None:
    """gateway/logs/setup.py quiets aiohttp's record of a client's bad head by this class."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger = logging.getLogger("aiohttp.server")
    logger.addHandler(handler)
    try:
        answer = await _raw(_port(site[0]), b"POST / HTTP/1.1\r\nBad Field: 1\r\n\r\n")
    finally:
        logger.removeHandler(handler)
    assert _BAD.match(answer) and b"Invalid header token" in answer
    errors = [r.exc_info[1] for r in records if r.exc_info]
    assert errors and all(isinstance(e, HttpProcessingError) for e in errors), records


def test_the_lane_bounds_are_aiohttp_request_handler_defaults() -> None:
    """A head within the lane's bounds is one aiohttp's parser reads too (lane_head.py),
    and the keep-alive client's line bound is aiohttp's (http1.py)."""
    defaults = {name: p.default for name, p in
                inspect.signature(RequestHandler.__init__).parameters.items()}
    assert defaults["max_line_size"] == lane_head.MAX_HEAD == http1._LINE
    assert defaults["max_field_size"] == lane_head.MAX_HEAD
    assert defaults["max_headers"] == lane_head.MAX_FIELDS


class _Conn(ParsedConnection):
    pass


async def test_the_response_parser_reads_what_the_keepalive_client_takes() -> None:
    loop = asyncio.get_running_loop()
    parser = _Conn().response_parser(loop, 8190)
    informational = b"HTTP/1.1 100 Continue\r\n\r\n"
    chunked = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    messages, upgraded, tail = parser.feed_data(informational + chunked)
    assert (upgraded, tail) == (False, b"")
    assert [m.code for m, _ in messages] == [100, 200]
    message, payload = messages[1]
    assert message.headers["content-type"] == "application/json"
    assert message.should_close is False
    assert payload.is_eof() and body_bytes_read(payload) == 5
    assert payload.read_nowait() == b"hello"

    closing = _Conn().response_parser(loop, 8190)
    messages, _, _ = closing.feed_data(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nab")
    message, payload = messages[0]
    assert message.should_close is True and not payload.is_eof()
    closing.feed_eof()  # a body without a length ends with the connection
    assert payload.is_eof() and payload.read_nowait() == b"ab"


async def test_the_response_parser_refuses_a_line_past_its_bound() -> None:
    parser = _Conn().response_parser(asyncio.get_running_loop(), 64)
    with pytest.raises(HttpProcessingError, match="more than 64 bytes"):
        parser.feed_data(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100 + b"\r\n\r\n")


class _Keeping(_Counting):
    """Loses its connection through lose_keeping_handler when ``keep`` is set."""

    keep = False
    server: web.Server | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        if _Keeping.keep and _Keeping.server is not None:
            lose_keeping_handler(_Keeping.server, lambda: self._inner.connection_lost(exc))
        else:
            self._inner.connection_lost(exc)


class _KeepingSite(ProtocolSite):
    def protocol(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        _Keeping.server = server
        return lambda: _Keeping(server())


@pytest.mark.parametrize("keep", [False, True])
async def test_lose_keeping_handler_spares_the_handler_aiohttp_would_cancel(
        keep: bool) -> None:
    """With handler cancellation on (as the gateway runs aiohttp), a client that leaves
    cancels its handler; lost through lose_keeping_handler, the handler runs on to its
    end (a journaled stream's driver reads on), and the server's setting is as it was."""
    entered, go_on = asyncio.Event(), asyncio.Event()
    ended: list[str] = []

    async def slow(request: web.Request) -> web.Response:
        entered.set()
        try:
            await go_on.wait()
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        ended.append("ran on")
        return web.Response(text="late")

    app = web.Application()
    app.router.add_get("/", slow)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = _KeepingSite(runner, "127.0.0.1", 0)
    await site.start()
    _Keeping.keep = keep
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", _port(site))
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.wait_for(entered.wait(), 10)
        writer.close()
        await writer.wait_closed()
        assert runner.server is not None
        for _ in range(200):  # the server sees the loss within a few passes of the loop
            if ended or not runner.server.connections:
                break
            await asyncio.sleep(0.01)
        go_on.set()
        for _ in range(200):
            if ended:
                break
            await asyncio.sleep(0.01)
        assert ended == (["ran on"] if keep else ["cancelled"])
        assert runner.server.handler_cancellation is True
    finally:
        _Keeping.keep = False
        await runner.cleanup()
