"""The gRPC side of the fault backend: one grpc.aio server (generic handlers, bytes in and
out) serving `lf.a2a.v1.A2AService` and `a2a.v1.A2AService`, and a raw TCP proxy in front
of it for the faults that cut the connection.

The servicer plays the fault's script (fault_cases.py), named by the `x-fault` metadata
the gateway sends as a static backend header. A cut cannot be made from inside a gRPC
servicer, so the proxy makes it, reading the HTTP/2 frames that pass: for reset_before
it cuts when the gateway's request is complete and lets no answer frame through; for
reset_during it lets the answer's headers and the first message (at most CUT_AFTER
bytes of it) through, then cuts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc

from tests.faults.fault_cases import (
    BY_NAME,
    FOREVER,
    PARTIAL_TEXT,
    Answer,
    Cut,
    End,
    Event,
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
    GRPC_SERVICES,
    SETTLE,
    VERSIONS,
    Dialect,
    Family,
    Version,
    encoded_answer,
    encoded_item,
    tcp_reset,
)

GARBAGE = b"\xff\xff\xff\xff"  # a truncated varint: parses as no message at all
CUT_AFTER = 1024  # bytes of the first message that reset_during lets through
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _END_STREAM = 0, 0x1


# ---------------------------------------------------------------- the servicer


async def serve_unary(family: Family, script: Script) -> bytes:
    for step in script:
        match step:
            case Sleep(seconds=seconds):
                await asyncio.sleep(seconds)
            case Answer(text=text):
                return encoded_answer(family, text, True)
            case Partial():  # the proxy lets part of it through
                return encoded_answer(family, PARTIAL_TEXT, True)
            case Garbage():
                return GARBAGE
            case Cut() | Hold():
                await asyncio.sleep(FOREVER)
            case _:
                raise AssertionError(f"{step} has no gRPC form")
    await asyncio.sleep(FOREVER)
    return b""


async def serve_stream(family: Family, script: Script, context: grpc.aio.ServicerContext) -> None:
    for step in script:
        match step:
            case Sleep(seconds=seconds):
                await asyncio.sleep(seconds)
            case Head():
                await context.send_initial_metadata(())
            case Event(what=what, text=text):
                await context.write(encoded_item(family, what, text, True))
            case Repeat(every=every):
                for _ in range(int(FOREVER / every)):
                    await context.write(encoded_item(family, "working", "x", True))
                    await asyncio.sleep(every)
            case Garbage():
                await context.write(GARBAGE)
            case Together(events=count):
                for _ in range(count):
                    await context.write(encoded_item(family, "working", "x", True))
                await context.write(GARBAGE)
            case End():
                return
            case Cut() | Hold():
                await asyncio.sleep(FOREVER)
            case _:
                raise AssertionError(f"{step} has no gRPC form")


# ---------------------------------------------------------------- the cutting proxy


def pop_frames(buf: bytearray) -> Iterator[tuple[bytes, bytes]]:
    """Complete HTTP/2 frames (header, payload) taken off the front of `buf`."""
    while len(buf) >= 9:
        end = 9 + int.from_bytes(buf[0:3], "big")
        if len(buf) < end:
            return
        header, payload = bytes(buf[:9]), bytes(buf[9:end])
        del buf[:end]
        yield header, payload


def _on_a_stream(header: bytes) -> bool:
    return int.from_bytes(header[5:9], "big") & 0x7FFFFFFF != 0


class Rule(Protocol):
    def __call__(self, buf: bytearray) -> tuple[bytes, bool]:
        """Consume from `buf`: the bytes to forward, and whether to cut after them."""
        ...


class RequestEnd:
    """Client → servicer (reset_before): cut when the request is complete."""

    def __init__(self) -> None:
        self._preface = len(PREFACE)

    def __call__(self, buf: bytearray) -> tuple[bytes, bool]:
        out = bytearray(buf[: self._preface])
        del buf[: self._preface]
        self._preface -= len(out)
        if self._preface:
            return bytes(out), False
        for header, payload in pop_frames(buf):
            if header[3] == _DATA and _on_a_stream(header) and header[4] & _END_STREAM:
                return bytes(out), True
            out += header + payload
        return bytes(out), False


class ConnectionFramesOnly:
    """Servicer → client (reset_before): settings and pings, no frame of an answer."""

    def __call__(self, buf: bytearray) -> tuple[bytes, bool]:
        return b"".join(h + p for h, p in pop_frames(buf) if not _on_a_stream(h)), False


class FirstMessage:
    """Servicer → client (reset_during): the answer's headers and its first message, or
    CUT_AFTER bytes of it when it is longer; then cut (a frame may be left unfinished)."""

    def __init__(self) -> None:
        self._left: int | None = None

    def __call__(self, buf: bytearray) -> tuple[bytes, bool]:
        out = bytearray()
        for header, payload in pop_frames(buf):
            if header[3] != _DATA or not _on_a_stream(header):
                out += header + payload
                continue
            if self._left is None:
                self._left = min(5 + int.from_bytes(payload[1:5], "big"), CUT_AFTER)
            part = payload[: self._left]
            self._left -= len(part)
            out += header + part
            if self._left == 0:
                return bytes(out), True
        return bytes(out), False


def _passthrough(buf: bytearray) -> tuple[bytes, bool]:
    out = bytes(buf)
    buf.clear()
    return out, False


# fault → (client → servicer rule, servicer → client rule)
CUT_RULES: dict[str, Callable[[], tuple[Rule, Rule]]] = {
    "reset_before": lambda: (RequestEnd(), ConnectionFramesOnly()),
    "reset_during": lambda: (_passthrough, FirstMessage()),
}


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rule: Rule) -> bool:
    """Forward what the rule lets through; True when it says cut, False at EOF."""
    buf = bytearray()
    while data := await reader.read(65536):
        buf += data
        out, cut = rule(buf)
        writer.write(out)
        await writer.drain()
        if cut:
            return True
    return False


class CuttingProxy:
    """Loopback ports in front of the servicer whose connections are cut by one fault's
    rules. Each `listen()` opens one more port: gRPC shares a connection among the
    channels of one target, so each caller that must see its own cut gets its own port."""

    def __init__(self, upstream_port: int, fault: str) -> None:
        self._upstream = upstream_port
        self._rules = CUT_RULES[fault]
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    async def listen(self) -> int:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        uwriter: asyncio.StreamWriter | None = None
        pumps: list[asyncio.Task[bool]] = []
        try:
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", self._upstream)
            up, down = self._rules()
            pumps = [asyncio.create_task(_pump(creader, uwriter, up)),
                     asyncio.create_task(_pump(ureader, cwriter, down))]
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            if any(not t.cancelled() and t.exception() is None and t.result() for t in done):
                await asyncio.sleep(SETTLE)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            tcp_reset(cwriter)
            if uwriter is not None:
                uwriter.transport.abort()
            self._tasks.discard(task)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()


# ---------------------------------------------------------------- the server


class GrpcFaultServer:
    """gRPC backends of both versions on one loopback port, and cutting proxies."""

    def __init__(self) -> None:
        self.port = 0
        self.seen: list[tuple[str, str, Mode]] = []  # (dialect, fault, mode) per call
        self._server = grpc.aio.server()
        self._server.add_generic_rpc_handlers([self._service(v) for v in VERSIONS])
        self._proxies: dict[str, CuttingProxy] = {}

    def _fault(self, context: grpc.aio.ServicerContext, version: str, mode: Mode) -> Script:
        metadata = dict(context.invocation_metadata() or ())
        fault = str(metadata.get("x-fault", "ok"))
        self.seen.append((f"grpc-{version}", fault, mode))
        return BY_NAME[fault].script(mode)

    def _service(self, version: Version) -> grpc.GenericRpcHandler:
        family = Dialect("GRPC", version).family

        async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return await serve_unary(family, self._fault(context, version, "unary"))

        async def stream(request: bytes, context: grpc.aio.ServicerContext) -> None:
            await serve_stream(family, self._fault(context, version, "stream"), context)

        table: dict[str, grpc.RpcMethodHandler] = {
            "SendMessage": grpc.unary_unary_rpc_method_handler(unary),
            "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream),
        }
        return grpc.method_handlers_generic_handler(GRPC_SERVICES[version], table)

    async def start(self) -> None:
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()

    async def cut_port(self, fault: str) -> int:
        """A fresh port whose connections reach the servicer through `fault`'s cuts."""
        if fault not in self._proxies:
            self._proxies[fault] = CuttingProxy(self.port, fault)
        return await self._proxies[fault].listen()

    async def stop(self) -> None:
        for proxy in self._proxies.values():
            await proxy.stop()
        await self._server.stop(0)

