"""The HTTP side of the fault backend: one raw asyncio server that impersonates a JSON-RPC
or REST backend of either version and plays a fault's script byte by byte.

The request says which dialect it is in (REST paths end in `:send`/`:stream`; JSON-RPC
method names are v0.3 `message/send` or v1.0 `SendMessage`), and the `x-fault` header
(a static backend header in the tenant's config) names the fault. Every answer carries
`Connection: close`, so no connection is reused after a fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from tests.faults.fault_cases import (
    BY_NAME,
    FOREVER,
    Answer,
    BadGateway,
    Cut,
    Drip,
    End,
    Event,
    Flood,
    Garbage,
    Head,
    Hold,
    Mode,
    Partial,
    Repeat,
    Script,
    Sleep,
    Together,
)
from tests.faults.fault_wire import (
    SETTLE,
    STREAM_METHODS,
    Dialect,
    Version,
    encoded_answer,
    encoded_item,
    tcp_reset,
)

SSE = "text/event-stream"
JSON = "application/json"
GARBAGE = b"<html><body>this is \xff not JSON</body></html>"
NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
             b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
             b"</body>\r\n</html>\r\n")
FLOOD_CHUNK = b"x" * 65536
FLOOD_LIMIT = 16 << 20  # 256x the gateway's cap; then silence, never a clean end


@dataclass(frozen=True)
class Exchange:
    """One request to the fault backend, as the backend understood it."""

    dialect: Dialect
    mode: Mode
    fault: str
    rpc_id: Any = None  # JSON-RPC only

    def _wrap(self, result: bytes, wrong_id: bool) -> bytes:
        if self.dialect.binding != "JSONRPC":
            return result
        rid = self.rpc_id
        if wrong_id:
            rid = rid + 1000 if isinstance(rid, int) else f"not-{rid}"
        return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(rid).encode(), result)

    def answer(self, text: str = "x", wrong_id: bool = False) -> bytes:
        return self._wrap(encoded_answer(self.dialect.family, text, False), wrong_id)

    def event(self, step: Event) -> bytes:
        item = encoded_item(self.dialect.family, step.what, step.text, False)
        return b"data: " + self._wrap(item, step.wrong_id) + b"\n\n"


def parse_exchange(target: str, headers: dict[str, str], body: bytes) -> Exchange:
    path = target.split("?", 1)[0]
    fault = headers.get("x-fault", "ok")
    version: Version
    mode: Mode
    if ":" in path.rsplit("/", 1)[-1]:  # REST: .../message:send, .../message:stream
        version = "0.3" if "/v1/" in path else "1.0"
        mode = "stream" if path.endswith((":stream", ":subscribe")) else "unary"
        return Exchange(Dialect("HTTP+JSON", version), mode, fault)
    envelope = json.loads(body)
    method = str(envelope.get("method", ""))
    version = "1.0" if method[:1].isupper() else "0.3"
    mode = "stream" if method in STREAM_METHODS else "unary"
    return Exchange(Dialect("JSONRPC", version), mode, fault, envelope.get("id"))


class Conn:
    """One accepted connection: raw HTTP/1.1 writes, silence, and resets."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.started = False
        self._chunked = False

    async def read_request(self) -> tuple[str, dict[str, str], bytes]:
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        target = lines[0].split(" ")[1]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return target, headers, body

    async def head(self, status: int, content_type: str, length: int | None = None) -> None:
        self.started = True
        self._chunked = length is None
        framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
        self.writer.write(f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: "
                          f"{content_type}\r\n{framing}\r\nConnection: close\r\n\r\n".encode())
        await self.writer.drain()

    async def send(self, data: bytes) -> None:
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" if self._chunked
                          else data)
        await self.writer.drain()

    async def whole(self, status: int, content_type: str, body: bytes) -> None:
        await self.head(status, content_type, len(body))
        await self.send(body)

    async def end(self) -> None:
        if self._chunked:
            self.writer.write(b"0\r\n\r\n")
            await self.writer.drain()

    async def hold(self, seconds: float) -> bool:
        """Wait `seconds` unless the peer closes first; True if it did."""
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(self.reader.read(), seconds)
            return True
        return self.writer.is_closing()

    async def cut(self) -> None:
        """A TCP reset, after the peer had time to read what was sent."""
        await asyncio.sleep(SETTLE)
        tcp_reset(self.writer)

    async def trickle(self, data: bytes, interval: float, limit: float) -> None:
        """Send `data` one byte at a time every `interval` seconds, up to `limit` seconds."""
        for i in range(int(limit / interval)):
            await self.send(data[i % len(data):][:1])
            await asyncio.sleep(interval)

    def close(self) -> None:
        self.writer.close()


async def play(conn: Conn, ex: Exchange, script: Script) -> None:
    """Play a fault script on one HTTP exchange. Returns when the script is over or the
    peer went away (writes to it then fail with ConnectionError)."""
    for step in script:
        match step:
            case Sleep(seconds=seconds):
                if await conn.hold(seconds):
                    return
            case Answer(text=text, wrong_id=wrong_id):
                await conn.whole(200, JSON, ex.answer(text, wrong_id))
            case Partial():
                body = ex.answer()
                await conn.head(200, JSON, len(body))
                await conn.send(body[: len(body) // 2])
                await conn.cut()
                return
            case Head():
                await conn.head(200, SSE)
            case Event():
                await conn.send(ex.event(step))
            case Repeat(every=every):
                for _ in range(int(FOREVER / every)):
                    await conn.send(ex.event(Event("working")))
                    await asyncio.sleep(every)
            case Garbage():
                if conn.started:
                    await conn.send(b"data: " + GARBAGE + b"\n\n")
                else:
                    await conn.whole(200, JSON, GARBAGE)
            case Together(events=count):
                await conn.send(b"".join(ex.event(Event("working")) for _ in range(count))
                                + b"data: " + GARBAGE + b"\n\n")
            case End():
                await conn.end()
            case Hold():
                await conn.hold(FOREVER)
            case Cut():
                await conn.cut()
                return
            case BadGateway():
                await conn.whole(502, "text/html", NGINX_502)
            case Flood(content_type=content_type):
                await conn.head(200, content_type)
                await conn.send(b'{"padding":"')
                for _ in range(FLOOD_LIMIT // len(FLOOD_CHUNK)):
                    await conn.send(FLOOD_CHUNK)
                await conn.hold(FOREVER)  # a capped gateway is gone long before
            case Drip(content_type=content_type):
                await conn.head(200, content_type)
                await conn.trickle(b'{"padding":"' + b"x" * 64, 0.01, FOREVER)


class HttpFaultServer:
    """JSON-RPC and REST backends of both versions on one loopback port."""

    def __init__(self) -> None:
        self.port = 0
        self.seen: list[tuple[str, str, Mode]] = []  # (dialect, fault, mode) per request
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = Conn(reader, writer)
        try:
            request = await conn.read_request()
            try:
                ex = parse_exchange(*request)
                script = BY_NAME[ex.fault].script(ex.mode)
            except (ValueError, KeyError, AssertionError) as exc:
                # Not a request this backend can play a fault on: the matrix reports it.
                self.seen.append(("unreadable request", repr(exc)[:100], "unary"))
                return
            self.seen.append((ex.dialect.name, ex.fault, ex.mode))
            await play(conn, ex, script)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the gateway went away: what these faults are for
        finally:
            self._tasks.discard(task)
            conn.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
