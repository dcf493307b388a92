"""Defect 6: slow and silent connections are closed after the configured timeouts, the
number of connections is capped, and the gateway keeps answering at its cap — even with
a small open-files limit, where silent connections used to make every call fail."""

from __future__ import annotations

import asyncio
import json
import re
import resource
import socket
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from tests.hardening.hardening_support import j03_message, post, rpc_body
from tests.support.helpers import (
    MakeGateway,
    free_port,
    gateway_cmd,
    stop_process,
    v03,
    wait_for_port,
    write_config,
)


def _closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


async def _call(http: aiohttp.ClientSession, url: str) -> str:
    status, _, reply = await post(http, url, rpc_body("message/send", {"message": j03_message()}))
    assert status == 200, reply
    return str(reply["result"]["parts"][0]["text"])


async def test_silent_and_slow_connections_are_closed(make_gateway: MakeGateway,
                                                     demo_agent: str) -> None:
    gw = await make_gateway({"d": v03(demo_agent)},
                            limits={"header_timeout": 0.5, "idle_timeout": 0.8})
    port = int(gw.rsplit(":", 1)[1])
    silent = socket.create_connection(("127.0.0.1", port))
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # headers that never end
    async with aiohttp.ClientSession() as http:
        assert await _call(http, gw + "/") == "echo: hi"  # an idle keep-alive connection now
        await asyncio.sleep(1.0)
        assert _closed(silent) and _closed(slow)
        # The idle keep-alive connection was closed too: the session must reconnect.
        assert await _call(http, gw + "/") == "echo: hi"


async def test_each_request_on_a_keep_alive_connection_gets_its_own_header_deadline(
        make_gateway: MakeGateway, demo_agent: str) -> None:
    """The deadline runs from the first byte of each request's headers: a second request
    that starts late is not cut at the first one's deadline, and is cut at its own."""
    gw = await make_gateway({"d": v03(demo_agent)},
                            limits={"header_timeout": 1.0, "idle_timeout": 10})
    reader, writer = await asyncio.open_connection("127.0.0.1", int(gw.rsplit(":", 1)[1]))
    body = json.dumps(rpc_body("message/send", {"message": j03_message()})).encode()
    started = time.monotonic()
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    assert length is not None
    reply = json.loads(await reader.readexactly(int(length[1])))
    assert reply["result"]["parts"][0]["text"] == "echo: hi"
    await asyncio.sleep(max(0.0, started + 0.6 - time.monotonic()))
    partial = time.monotonic()
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n")  # headers that never end
    await asyncio.sleep(0.6)  # past the first request's deadline, not this one's
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1), 0.05)  # still open
    assert await asyncio.wait_for(reader.read(), 3.0) == b""  # then closed, unanswered
    assert time.monotonic() - partial >= 0.95
    writer.close()


async def test_at_its_cap_the_gateway_keeps_answering(make_gateway: MakeGateway,
                                                     demo_agent: str) -> None:
    gw = await make_gateway({"d": v03(demo_agent)},
                            limits={"max_connections": 20, "header_timeout": 30})
    port = int(gw.rsplit(":", 1)[1])
    hogs = []
    for _ in range(60):  # three times the cap, all sending headers slowly
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        hogs.append(sock)
    await asyncio.sleep(0.2)
    async with aiohttp.ClientSession() as http:
        for _ in range(5):
            started = time.monotonic()
            assert await _call(http, gw + "/") == "echo: hi"
            assert time.monotonic() - started < 1
        async with http.get(gw + "/metrics") as resp:
            metrics = await resp.text()
    assert "a2a_gateway_connections_closed_total{reason=\"evicted_waiting\"}" in metrics
    assert sum(not _closed(s) for s in hogs) <= 20
    for sock in hogs:
        sock.close()


async def test_silent_connections_cannot_exhaust_a_small_open_files_limit(
        tmp_path: Path) -> None:
    port, demo = free_port(), free_port()
    config = write_config(tmp_path / "gw.yaml", {
        "listen": {"http": f"127.0.0.1:{port}"}, "demo_agent": {"listen": f"127.0.0.1:{demo}"},
        "tenants": {"d": {"backend": {"url": f"http://127.0.0.1:{demo}/", "version": "0.3"}}}})

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    with open(tmp_path / "gw.log", "wb") as log:
        proc = subprocess.Popen(gateway_cmd(config), stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=small_limit)
        try:
            wait_for_port(port, 30, proc)
            hogs = [socket.create_connection(("127.0.0.1", port)) for _ in range(562)]
            async with aiohttp.ClientSession() as http:
                for _ in range(3):
                    assert await _call(http, f"http://127.0.0.1:{port}/") == "echo: hi"
            for sock in hogs:
                sock.close()
        finally:
            assert stop_process(proc) == 0
