"""The unary backend client's keep-alive pool (gateway/egress/http1.py) against a raw
HTTP/1.1 server on loopback that answers each request with a scripted reply: reuse,
every way an answer can end, and every way an exchange can go wrong closes its
connection instead of handing a half-read one to the next call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from gateway.egress import http1
from gateway.egress.http1 import AnswerTooLarge, Http1Pool
from tests.support.waiting import wait_until

Reply = Callable[[bytes], bytes | None]  # the request's bytes -> what to write (None: nothing)


@dataclass
class Server:
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    close_after: bool = False  # close each connection after its reply
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = self.replies.pop(0) if self.replies else ok(b'{"ok":1}')
                out = reply(request)
                if out is not None:
                    writer.write(out)
                    await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(body: bytes, extra: bytes = b"") -> Reply:
    return lambda _: (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra
                      + b"Content-Length: %d\r\n\r\n" % len(body) + body)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = Server()
    srv = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    s.port = srv.sockets[0].getsockname()[1]
    try:
        yield s
    finally:
        for w in s.writers:
            w.close()
        srv.close()


def pool_for(server: Server) -> Http1Pool:
    return Http1Pool(f"http://127.0.0.1:{server.port}/rpc?x=1")


async def post(pool: Http1Pool, body: bytes = b"{}", *, limit: int = 1 << 20,
               total: float | None = 5.0) -> http1.Answer:
    return await pool.request("POST", None, {"content-type": "application/json",
                                             "x-request-id": "r1"}, body,
                              limit=limit, total=total, connect=2.0)


async def test_requests_reuse_one_connection_and_carry_their_headers(server: Server) -> None:
    pool = pool_for(server)
    for i in range(3):
        server.replies.append(ok(b'{"n":%d}' % i, b"A2A-Extensions: urn:x\r\n"))
        answer = await post(pool, b'{"q":%d}' % i)
        assert (answer.status, answer.body) == (200, b'{"n":%d}' % i)
        assert answer.content_type == "application/json"
        assert answer.headers["a2a-extensions"] == "urn:x"
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /rpc?x=1 HTTP/1.1\r\n")
    assert b"Host: 127.0.0.1:%d\r\n" % server.port in first
    assert b"x-request-id: r1\r\n" in first and first.endswith(b'\r\n\r\n{"q":0}')
    pool.close()


async def test_chunked_and_until_close_answers_are_read_whole(server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(lambda _: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
    assert (await post(pool)).body == b"abcdefg"
    server.close_after = True
    server.replies.append(lambda _: b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof")
    assert (await post(pool)).body == b"until-eof"
    server.close_after = False
    assert (await post(pool)).body == b'{"ok":1}'  # a new connection: the old one closed
    assert server.connections == 2
    pool.close()


async def test_informational_answers_are_skipped(server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(lambda _: b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"{}")(b""))
    assert (await post(pool)).body == b"{}"
    pool.close()


async def test_connection_close_is_honoured(server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(ok(b"{}", b"Connection: close\r\n"))
    await post(pool)
    await post(pool)
    assert server.connections == 2
    pool.close()


@pytest.mark.parametrize("reply", [
    ok(b"x" * 2000),  # Content-Length over the limit
    lambda _: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              + (b"100\r\n" + b"y" * 256 + b"\r\n") * 3 + b"0\r\n\r\n",  # no length
])
async def test_an_answer_over_the_limit_is_refused_and_its_connection_closed(
        server: Server, reply: Reply) -> None:
    pool = pool_for(server)
    server.replies.append(reply)
    with pytest.raises(AnswerTooLarge):
        await post(pool, limit=300)
    assert (await post(pool)).body == b'{"ok":1}'
    assert server.connections == 2
    pool.close()


async def test_a_timeout_closes_the_connection_so_a_late_answer_reaches_nobody(
        server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(lambda _: None)  # never answers on this connection
    with pytest.raises(TimeoutError):
        await post(pool, total=0.2)
    server.replies.append(ok(b'{"late":0}'))
    assert (await post(pool)).body == b'{"late":0}'
    assert server.connections == 2
    pool.close()


async def test_a_cancelled_exchange_closes_its_connection(server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(lambda _: None)
    task = asyncio.create_task(post(pool))
    await wait_until(lambda: server.requests, "the request at the server")  # in flight
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await post(pool)).body == b'{"ok":1}'
    assert server.connections == 2
    pool.close()


async def test_a_connection_the_backend_closed_while_idle_is_not_reused(
        server: Server) -> None:
    pool = pool_for(server)
    await post(pool)
    idle = list(pool._idle)
    assert idle
    for w in server.writers:
        w.close()
    await wait_until(lambda: all(conn.closed for conn in idle),
                     "the FIN arrives: the pooled connection knows")
    assert (await post(pool)).body == b'{"ok":1}'
    assert server.connections == 2
    pool.close()


@pytest.mark.parametrize("raw", [b"NOT HTTP\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
                                 b"\r\nshort"])
async def test_a_malformed_or_cut_answer_is_a_broken_connection(server: Server,
                                                                 raw: bytes) -> None:
    pool = pool_for(server)
    server.close_after = True
    server.replies.append(lambda _: raw)
    with pytest.raises(ConnectionError):  # BadAnswer, or the cut connection's
        await post(pool)
    pool.close()


async def test_unreachable_and_header_injection_fail_before_anything_is_sent(
        server: Server) -> None:
    gone = Http1Pool("http://127.0.0.1:9/")  # discard port: nothing listens
    with pytest.raises(OSError):
        await post(gone)
    pool = pool_for(server)
    with pytest.raises(ValueError):
        await pool.request("POST", None, {"x-evil": "a\r\nHost: elsewhere"}, b"{}", limit=100,
                           total=1, connect=1)
    assert server.requests == []
    # The gateway's own framing headers are never taken from configured or forwarded ones.
    await pool.request("POST", None, {"Host": "elsewhere", "content-length": "99"}, b"{}",
                       limit=100, total=1, connect=1)
    # The header, not the digits: the server's port may hold "99" (36599 did, in one run).
    sent = server.requests[0].lower()
    assert b"elsewhere" not in sent and b"content-length: 99" not in sent
    assert b"content-length: 2\r\n" in sent
    pool.close()


async def test_idle_connections_are_closed_after_the_keepalive_and_on_close(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "KEEPALIVE", 0.2)
    pool = pool_for(server)
    await asyncio.gather(post(pool), post(pool))
    assert server.connections == 2
    await wait_until(lambda: pool._idle == [], "the idle connections closed after 0.2 s")
    await post(pool)
    assert server.connections == 3
    idle = list(pool._idle)
    pool.close()
    assert all(c.closed for c in idle) and pool._idle == []


def test_only_plain_http_urls() -> None:
    assert Http1Pool.supports("http://a:1/x") and not Http1Pool.supports("https://a/x")
    with pytest.raises(ValueError):
        Http1Pool("https://a/x")


async def test_targets_and_bodiless_requests_are_framed_as_aiohttp_frames_them(
        server: Server) -> None:
    pool = Http1Pool(f"http://127.0.0.1:{server.port}/base/")
    target = pool.target("/v1/tasks/a b%2F/é:x", {"historyLength": "2", "q": "1 2"})
    assert target == "/base/v1/tasks/a%20b%2F/%C3%A9:x?historyLength=2&q=1+2"
    for method in ("GET", "DELETE", "POST"):
        await pool.request(method, target, {}, None, limit=100, total=1, connect=1)
    get, delete, post = server.requests
    assert get.startswith(b"GET /base/v1/tasks/a%20b%2F/%C3%A9:x?historyLength=2&q=1+2 ")
    assert b"content-length" not in get.lower() and b"content-length" not in delete.lower()
    assert post.endswith(b"Content-Length: 0\r\n\r\n")
    pool.close()


async def test_an_answer_with_another_after_it_leaves_its_connection_unused(
        server: Server) -> None:
    pool = pool_for(server)
    server.replies.append(lambda _: ok(b'{"a":1}')(b"") + ok(b'{"unasked":1}')(b""))
    assert (await post(pool)).body == b'{"a":1}'
    assert (await post(pool)).body == b'{"ok":1}'  # not the unasked answer
    assert server.connections == 2
    pool.close()


async def test_each_exchange_on_a_reused_connection_keeps_its_own_deadline(
        server: Server) -> None:
    """One timer per connection: a later exchange's sooner deadline still fires on time,
    and an earlier exchange's timer firing during a later, slower-due exchange does not
    end it."""
    pool = pool_for(server)

    def late(delay: float) -> Reply:
        def reply(request: bytes) -> None:
            writer = server.writers[-1]
            asyncio.get_running_loop().call_later(delay, writer.write, ok(b'{"ok":2}')(request))
        return reply

    assert (await post(pool, total=30.0)).body == b'{"ok":1}'  # arms a timer 30 s out
    server.replies.append(late(1.0))
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        await post(pool, total=0.2)  # sooner than the armed one
    assert loop.time() - started < 0.8
    assert (await post(pool, total=0.2)).body == b'{"ok":1}'  # a new connection
    server.replies.append(late(0.4))
    assert (await post(pool, total=5.0)).body == b'{"ok":2}'  # outlives the 0.2 s timer
    assert server.connections == 2
