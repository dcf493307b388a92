"""The fast lane (gateway/ingress/fast_lane.py): plain JSON-RPC calls answered without
aiohttp's web layer, exactly as aiohttp's route answers them, and every other request
on the connection handed to aiohttp with none of its bytes lost."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.ingress.fast_lane import HANDOVERS
from tests.support.auth_pki import issue, make_ca
from tests.support.helpers import MakeGateway, serving
from tests.support.waiting import wait_until

SEND = {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": {
    "kind": "message", "messageId": "m1", "role": "user",
    "parts": [{"kind": "text", "text": "hello"}]}}}


def _backend() -> web.Application:
    """A v0.3 JSON-RPC agent: a fixed message back, its id the call's, or SSE for a
    stream."""
    async def rpc(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        result = {"kind": "message", "messageId": "a1", "role": "agent",
                  "parts": [{"kind": "text", "text": "echo " + body["params"]["message"]
                             ["parts"][0]["text"]}]}
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": result}
        if body["method"] != "message/stream":
            return web.json_response(answer)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(f"data: {json.dumps(answer)}\n\n".encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/", rpc)
    return app


@pytest.fixture
async def backend() -> AsyncIterator[str]:
    async with serving(_backend()) as base:
        yield base + "/"


def request_bytes(payload: object, path: str = "/", extra: str = "",
                  body: bytes | None = None) -> bytes:
    data = json.dumps(payload).encode() if body is None else body
    return (f"POST {path} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
            f"X-Request-ID: req-1\r\n{extra}Content-Length: {len(data)}\r\n\r\n"
            ).encode() + data


async def read_answer(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """One HTTP/1.1 answer: status line, headers (lower-case names), body."""
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    status, *lines = head[:-4].split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        chunks = []
        while size := int((await asyncio.wait_for(reader.readline(), 10)).strip(), 16):
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        await reader.readline()
        body = b"".join(chunks)
    else:
        body = await asyncio.wait_for(reader.read(), 10)
    return status, headers, body


async def exchange(base: str, data: bytes, answers: int = 1,
                   ) -> list[tuple[str, dict[str, str], bytes]]:
    port = int(base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return [await read_answer(reader) for _ in range(answers)]
    finally:
        writer.close()


def handovers(reason: str) -> float:
    return HANDOVERS.labels(reason)._value.get()  # type: ignore[attr-defined, no-any-return]


async def gateways(make_gateway: MakeGateway, backend: str, **extra: Any) -> tuple[str, str]:
    """The same gateway twice: with the fast lane, and without it."""
    tenants = {"q": {"backend": {"url": backend, "version": "0.3"}}}
    return (await make_gateway(tenants, **extra),
            await make_gateway(tenants, fast_lane=False, **extra))


@pytest.mark.parametrize("payload, path", [
    (SEND, "/"),                                                 # translated call
    (SEND, "/q"),                                                # tenant in the path
    (SEND, "/q/"),
    ({**SEND, "method": "message/sned"}, "/"),                   # no such method
    ({**SEND, "params": {"message": {"kind": "message"}}}, "/"),  # invalid params
    (SEND, "/nobody"),                                           # no such tenant
    ({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "t"}}, "/"),
])
async def test_the_lane_answers_as_aiohttp_does(
        make_gateway: MakeGateway, backend: str, payload: object, path: str) -> None:
    lane, plain = await gateways(make_gateway, backend)
    before = sum(handovers(r) for r in ("not_plain", "stream", "body_pending"))
    (got,) = await exchange(lane, request_bytes(payload, path))
    (want,) = await exchange(plain, request_bytes(payload, path))
    assert sum(handovers(r) for r in ("not_plain", "stream", "body_pending")) == before
    got[1].pop("date"), want[1].pop("date")
    assert got == want
    assert got[1]["x-request-id"] == "req-1"


async def test_bad_json_is_answered_in_the_lane_as_by_aiohttp(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, plain = await gateways(make_gateway, backend)
    (got,) = await exchange(lane, request_bytes(None, body=b'{"jsonrpc": "2.0", "id": 1,'))
    (want,) = await exchange(plain, request_bytes(None, body=b'{"jsonrpc": "2.0", "id": 1,'))
    got[1].pop("date"), want[1].pop("date")
    assert got == want and json.loads(got[2])["error"]["code"] == -32700


async def test_pipelined_calls_are_answered_in_order(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    calls = [{**SEND, "id": i, "params": {"message": {**SEND["params"]["message"],  # type: ignore[index]
                                                     "parts": [{"kind": "text", "text": f"n{i}"}]}}}
             for i in range(5)]
    answers = await exchange(lane, b"".join(request_bytes(c) for c in calls), answers=5)
    bodies = [json.loads(body) for _, _, body in answers]
    assert [(b["id"], b["result"]["parts"][0]["text"]) for b in bodies] == \
        [(i, f"echo n{i}") for i in range(5)]


async def test_a_body_that_comes_later_is_read_by_aiohttp(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    data = request_bytes(SEND)
    port = int(lane.rsplit(":", 1)[1])
    before = handovers("body_pending")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data[:-10])
        # The lane has read the head and hands the body still on its way to aiohttp.
        await wait_until(lambda: handovers("body_pending") == before + 1, "the handover")
        writer.write(data[-10:])
        status, _, body = await read_answer(reader)
        # The connection stays aiohttp's: a second call on it is answered too.
        writer.write(data)
        second = await read_answer(reader)
    finally:
        writer.close()
    assert status == "HTTP/1.1 200 OK"
    assert json.loads(body)["result"]["parts"][0]["text"] == "echo hello"
    assert json.loads(second[2])["result"]["parts"][0]["text"] == "echo hello"
    assert handovers("body_pending") == before + 1


async def test_a_stream_after_lane_calls_goes_to_aiohttp_whole(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    before = handovers("stream")
    stream = {**SEND, "id": 8, "method": "message/stream"}
    answers = await exchange(lane, request_bytes(SEND) + request_bytes(stream) +
                             request_bytes({**SEND, "id": 9}), answers=2)
    (_, _, unary), (_, headers, sse) = answers
    assert json.loads(unary)["id"] == 7
    assert headers["content-type"].startswith("text/event-stream")
    assert b'"id": 8' in sse or b'"id":8' in sse
    assert b"echo hello" in sse
    assert handovers("stream") == before + 1


async def test_a_stream_named_with_json_escapes_is_still_streamed(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    body = json.dumps({**SEND, "method": "message/stream"}).replace("/", "\\/").encode()
    (status, headers, sse), = await exchange(lane, request_bytes(None, body=body))
    assert status == "HTTP/1.1 200 OK"
    assert headers["content-type"].startswith("text/event-stream")
    assert b"echo hello" in sse


@pytest.mark.parametrize("extra", [
    "Content-Length: 3\r\n",                       # two lengths: smuggling
    "Transfer-Encoding: chunked\r\n",              # with a length
])
async def test_heads_the_lane_does_not_serve_get_aiohttp_s_answer(
        make_gateway: MakeGateway, backend: str, extra: str) -> None:
    lane, plain = await gateways(make_gateway, backend)
    before = handovers("not_plain")
    (got,) = await exchange(lane, request_bytes(SEND, extra=extra))
    (want,) = await exchange(plain, request_bytes(SEND, extra=extra))
    assert got[0] == want[0] == "HTTP/1.0 400 Bad Request"  # aiohttp's own refusal
    assert handovers("not_plain") == before + 1


async def test_a_chunked_call_is_answered(make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    body = json.dumps(SEND).encode()
    data = (b"POST / HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body +
            b"\r\n0\r\n\r\n")
    ((status, _, answer),) = await exchange(lane, data)
    assert status == "HTTP/1.1 200 OK"
    assert json.loads(answer)["result"]["parts"][0]["text"] == "echo hello"


async def test_a_body_over_the_limit_is_refused_as_before(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, plain = await gateways(make_gateway, backend, max_body_bytes=100)
    (got,) = await exchange(lane, request_bytes(SEND))
    (want,) = await exchange(plain, request_bytes(SEND))
    got[1].pop("date"), want[1].pop("date")
    assert got == want and got[0] == "HTTP/1.1 413 Request Entity Too Large"


async def test_an_idle_lane_connection_is_closed(
        make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend, limits={"idle_timeout": 0.3})
    port = int(lane.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request_bytes(SEND))
        await read_answer(reader)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the gateway
        assert 0.2 < loop.time() - started < 2.0
    finally:
        writer.close()


async def test_connection_close_is_honoured(make_gateway: MakeGateway, backend: str) -> None:
    lane, _ = await gateways(make_gateway, backend)
    port = int(lane.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request_bytes(SEND, extra="Connection: close\r\n"))
        _, headers, _ = await read_answer(reader)
        assert headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        writer.close()


async def test_a_tls_client_that_closes_leaves_no_asyncio_warning(
        make_gateway: MakeGateway, backend: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """A TLS client's close_notify, after its answer or before it: the lane ends the
    connection as aiohttp does. Its eof_received once returned True (keep the half-open
    connection, which TLS cannot): asyncio's plain-text "returning true from
    eof_received() has no effect when using ssl" on stderr, outside the JSON log."""
    ca = make_ca("lane CA")
    cert, key = issue(ca, "gateway", server=True).write(tmp_path, "server")
    tenants = {"q": {"backend": {"url": backend, "version": "0.3"}}}
    gw = await make_gateway(tenants, auth={"server_tls": {"cert_file": cert, "key_file": key}})
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    client.check_hostname = False
    port = int(gw.rsplit(":", 1)[1])
    caplog.set_level(logging.DEBUG, logger="asyncio")
    answers = []
    for wait_for_answer in (True, False):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        writer.write(request_bytes(SEND, "/q"))
        if wait_for_answer:
            answers.append(await read_answer(reader))
        writer.close()  # close_notify
        await writer.wait_closed()
    # A call on a fresh connection: every earlier close has been handled by now.
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
    writer.write(request_bytes(SEND, "/q"))
    answers.append(await read_answer(reader))
    writer.close()
    assert [status for status, _, _ in answers] == ["HTTP/1.1 200 OK"] * 2
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
