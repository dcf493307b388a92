"""What the fast lane parses itself, and what it leaves to aiohttp (gateway/ingress/
fast_lane.py): anything but a plain, strictly formed JSON-RPC POST goes to aiohttp."""

from __future__ import annotations

import pytest
from aiohttp import web

from gateway.ingress.common import Reply, as_response
from gateway.ingress.fast_lane import reply_bytes, response_bytes
from gateway.ingress.lane_head import (
    MAX_FIELDS,
    MAX_KNOWN_HEADS,
    LaneCall,
    checked_until,
    may_become_plain,
    parse_head,
    read_request,
)
from translators.dialects.base import HttpAnswer

PLAIN = b"POST /t1 HTTP/1.1\r\nHost: gw\r\nContent-Length: 12\r\nX-A:  spaced  \r\n"


def test_a_plain_head_is_parsed() -> None:
    parsed = parse_head(PLAIN)
    assert parsed is not None
    path, headers, length = parsed
    assert (path, length) == ("/t1", 12)
    assert headers["host"] == "gw" and headers["X-A"] == "spaced"


def test_a_head_read_again_is_not_parsed_again() -> None:
    parse_head.cache_clear()
    body = b'{"jsonrpc":"2.0"}'
    request = PLAIN.replace(b"12", str(len(body)).encode()) + b"\r\n" + body
    first = read_request(bytearray(request), 0, 1024)
    again = read_request(bytearray(request * 2), len(request), 1024)
    assert isinstance(first, LaneCall) and isinstance(again, LaneCall)
    assert (again.path, again.body) == (first.path, first.body) == ("/t1", body)
    assert again.headers is first.headers  # the first reading's, kept
    assert parse_head.cache_info().hits == 1
    with pytest.raises(TypeError):  # shared by the requests of one head: read-only
        again.headers["X-A"] = "changed"  # type: ignore[index]


def test_the_heads_kept_are_bounded() -> None:
    parse_head.cache_clear()
    heads = [b"POST / HTTP/1.1\r\nHost: gw\r\nContent-Length: %d\r\n" % n
             for n in range(MAX_KNOWN_HEADS + 10)]
    assert [parsed[2] for parsed in map(parse_head, heads) if parsed] == \
        list(range(MAX_KNOWN_HEADS + 10))  # each head its own answer
    assert parse_head.cache_info().currsize == MAX_KNOWN_HEADS == 256  # docs: 256 heads


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\nContent-Length: 1\r\n",                 # not a POST
    b"post / HTTP/1.1\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.0\r\nContent-Length: 1\r\n",                # HTTP/1.0
    b"POST /?A2A-Version=1.0 HTTP/1.1\r\nContent-Length: 1\r\n",  # a query
    b"POST /t%31 HTTP/1.1\r\nContent-Length: 1\r\n",            # percent-encoding
    b"POST /a/b HTTP/1.1\r\nContent-Length: 1\r\n",             # not a JSON-RPC path
    b"POST /v1/message:send HTTP/1.1\r\nContent-Length: 1\r\n",
    b"POST  / HTTP/1.1\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 1\r\n folded\r\n",    # obs-fold
    b"POST / HTTP/1.1\r\nBad Name: x\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nX: a\x00b\r\nContent-Length: 1\r\n",  # control character
    b"POST / HTTP/1.1\r\nX: a\nb\r\nContent-Length: 1\r\n",    # bare LF
    b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: +1\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: \xd9\xa1\r\n",        # a non-ASCII digit
    b"POST / HTTP/1.1\r\nHost: gw\r\n",                         # no length
    b"POST / HTTP/1.1\r\nContent-Length: 1\r\n",                # no Host (aiohttp: 400)
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\n" + b"X: y\r\n" * MAX_FIELDS + b"Content-Length: 1\r\n",
    # What aiohttp's parser refuses goes to it, for its answer: a field it takes once...
    b"POST / HTTP/1.1\r\nHost: a\r\nHOST: b\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nContent-Type: a/b\r\ncontent-type: a/b\r\nContent-Length: 1\r\n",
    b"POST / HTTP/1.1\r\nUser-Agent: a\r\nUser-Agent: a\r\nContent-Length: 1\r\n",
    # ...and a length past int()'s 4300 digits, or past any limit (leading zeros too).
    b"POST / HTTP/1.1\r\nContent-Length: " + b"1" * 5000 + b"\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: " + b"0" * 5000 + b"1\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: " + b"0" * 18 + b"1\r\n",
])
def test_anything_else_goes_to_aiohttp(head: bytes) -> None:
    assert parse_head(head) is None


def test_fields_aiohttp_takes_more_than_once_are_kept() -> None:
    parsed = parse_head(b"POST / HTTP/1.1\r\nHost: gw\r\nConnection: keep-alive\r\nConnection: close\r\n"
                        b"Accept: a\r\nAccept: b\r\nContent-Length: " + b"0" * 17 + b"1\r\n")
    assert parsed is not None
    _, headers, length = parsed
    assert headers.getall("Connection") == ["keep-alive", "close"] and length == 1


@pytest.mark.parametrize("partial, plain", [
    (b"", True),
    (b"PO", True),
    (b"POST / HTTP/1.1\r", True),
    (b"POST / HTTP/1.1\r\nHost: gw\r\nConte", True),
    (b"POST / HTTP/1.1\nHost: gw\n\n", False),                # bare LF line ends
    (b"POST / HTTP/1.1\r\nHost: gw\n", False),
    (b"POST / HTTP/1.1\r\nHost: g\rw", False),                 # a bare CR
    (b'"}}', False),                                            # not a request
    (b"GET / HTTP/1.1\r\n", False),
    (b"POST / HTTP/1.0\r\nHost: gw\r\n", False),
    (b"POST / HTTP/1.1\r\nBad Name: x\r\nHo", False),
])
def test_a_head_still_coming_is_handed_over_once_it_cannot_be_plain(
        partial: bytes, plain: bool) -> None:
    """aiohttp answers a broken head at once; the lane must not wait for its end."""
    assert may_become_plain(partial) is plain


CALL = b"POST / HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\n\r\n{}"


@pytest.mark.parametrize("data, verdict", [
    (CALL, LaneCall),
    (CALL[:20], None),                                          # its head still coming
    (CALL[:-1], "body_pending"),
    (CALL.replace(b"Host: gw", b"Host: gw\r\nConnection: close"), LaneCall),
    # A request that closes the connection, with bytes after it: aiohttp refuses the read.
    (CALL.replace(b"Host: gw", b"Host: gw\r\nConnection: keep-alive\r\nConnection: close") + CALL,
     "not_plain"),
    (CALL.replace(b"Host: gw", b"Host: gw\r\nConnection: x, Close") + b"P", "not_plain"),
    (CALL.replace(b"\r\n", b"\n"), "not_plain"),               # bare LF: no waiting
])
def test_a_request_is_read_whole_or_left_to_aiohttp(data: bytes, verdict: object) -> None:
    got = read_request(bytearray(data), 0, 1000)
    assert (type(got) if isinstance(got, LaneCall) else got) == verdict


def _call_with(body: bytes) -> bytearray:
    return bytearray(b"POST / HTTP/1.1\r\nHost: gw\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))


@pytest.mark.parametrize("method", ["SendStreamingMessage", "message/stream",
                                    "SubscribeToTask", "tasks/resubscribe"])
def test_a_body_naming_a_streaming_method_is_left_to_aiohttp(method: str) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"%s","params":{}}' % method.encode()
    assert read_request(_call_with(body), 0, 1000) == "stream"


@pytest.mark.parametrize("text", [b"a stream", b"Streams", b"unsubscribed", b"stream/message"])
def test_a_body_that_only_looks_like_a_stream_is_served(text: bytes) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"t":"%s"}}' % text
    assert isinstance(read_request(_call_with(body), 0, 1000), LaneCall)


@pytest.mark.parametrize("after, checked", [
    (b"", 0),
    (CALL + CALL, 2 * len(CALL)),
    (CALL + CALL[:30], len(CALL)),                              # the next still coming
    (CALL + CALL[:-1], len(CALL)),
    (CALL + CALL.replace(b"Host: gw", b"Host: gw\r\nHost: gw"), None),  # aiohttp: 400
    (CALL + b'"}}', None),
    (CALL.replace(b"Host: gw", b"Connection: close\r\nHost: gw") + CALL, None),
])
def test_pipelined_requests_are_all_checked_before_the_first_is_served(
        after: bytes, checked: int | None) -> None:
    """aiohttp answers a read with one refused request in it by one 400 for all of it."""
    buffer = bytearray(CALL + after)
    assert checked_until(buffer, len(CALL)) == (None if checked is None
                                                 else len(CALL) + checked)


def test_an_answer_is_written_with_the_headers_aiohttp_adds() -> None:
    response = web.Response(body=b'{"a":1}', status=200, content_type="application/json",
                            headers={"X-Request-ID": "r1"})
    head, _, body = response_bytes(response, close=True).partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK" and body == b'{"a":1}'
    assert {"X-Request-ID: r1", "Content-Type: application/json", "Content-Length: 7",
            "Connection: close"} <= set(lines)
    assert any(line.startswith("Date: ") for line in lines)
    assert any(line.startswith("Server: ") for line in lines)


def test_a_newline_in_a_header_is_never_written() -> None:
    response = web.Response(body=b"{}", content_type="application/json")
    response.headers["X-Echo"] = "a\r\nSet-Cookie: x=1"
    with pytest.raises(ValueError):
        response_bytes(response, close=False)


@pytest.mark.parametrize("reply", [
    Reply(HttpAnswer(200, b'{"ok":1}'), {"X-Request-ID": "r1"}),
    Reply(HttpAnswer(429, b"{}", {"X-Extra": "1"}), {"Retry-After": "1"}),
    Reply(HttpAnswer(413, b"{}"), {}),                          # closes the connection
    Reply(HttpAnswer(200, b"x", content_type="text/plain"), {}),
])
def test_a_reply_is_written_as_its_aiohttp_response(reply: Reply) -> None:
    """The lane's bytes for a reply and for the response aiohttp's route makes of it."""
    def lines(data: bytes) -> tuple[str, set[str], bytes]:
        head, _, body = data.partition(b"\r\n\r\n")
        status, *rest = head.decode().split("\r\n")
        return status, {line for line in rest if not line.startswith("Date: ")}, body

    response = as_response(reply)
    assert lines(reply_bytes(reply, reply.closes)) == \
        lines(response_bytes(response, response.keep_alive is False))
