"""A loopback TCP relay between the gateway and an agent, which a test tells to cut the
connections through it: the backend connection breaks by a real TCP reset (RST), as a
crashed peer or a middlebox drop breaks it, while the agent and the gateway stay up.

Bytes are relayed as they come, both ways; the relay reads nothing of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.support.helpers import free_port

_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST, not FIN


class TcpRelay:
    """127.0.0.1:``port`` relayed to 127.0.0.1:``target``."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.accepted = 0  # connections taken, for tests that wait for a new one
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port,
                                                  reuse_address=True)

    async def reset(self) -> int:
        """Reset every connection open through the relay, both sides; how many."""
        pairs = list(self._pairs)
        for pair in pairs:
            for writer in pair:
                _abort(writer)
        self._pairs.clear()
        return len(pairs)

    async def away(self) -> None:
        """The agent is gone: no more connections (refused), the open ones reset."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self.reset()

    async def close(self) -> None:
        await self.away()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            _abort(writer)
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        pipes = [asyncio.ensure_future(_pipe(reader, up_writer)),
                 asyncio.ensure_future(_pipe(up_reader, writer))]
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)
            self._pipes.difference_update(pipes)
            if pair in self._pairs:  # ended by a side, not reset: close the other
                self._pairs.discard(pair)
                for end in pair:
                    end.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


def _abort(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    writer.transport.abort()


@asynccontextmanager
async def tcp_relay(target: int) -> AsyncIterator[TcpRelay]:
    relay = TcpRelay(target)
    await relay.listen()
    try:
        yield relay
    finally:
        await relay.close()
