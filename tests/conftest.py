"""Fixtures every test directory shares: in-process gateways, the demo agent, a client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gateway.config.models import parse_config
from gateway.demo.agent import start_demo_agent
from gateway.server.app import Server
from tests.support.helpers import MakeGateway, free_port


@pytest.fixture
async def demo_agent() -> AsyncIterator[str]:
    port = free_port()
    runner = await start_demo_agent("127.0.0.1", port)
    yield f"http://127.0.0.1:{port}/"
    await runner.cleanup()


@pytest.fixture
async def make_gateway() -> AsyncIterator[MakeGateway]:
    """Start real gateways on loopback ports; returns their base URL."""
    servers: list[Server] = []

    async def make(tenants: dict[str, Any], *, grpc_port: int | None = None,
                   listen_admin: str | None = None,
                   listen_grpc_reflection: bool = True, **extra: Any) -> str:
        port = free_port()
        listen: dict[str, Any] = {"http": f"127.0.0.1:{port}"}
        if grpc_port is not None:
            listen["grpc"] = f"127.0.0.1:{grpc_port}"
        if listen_admin is not None:
            listen["admin"] = listen_admin
        if not listen_grpc_reflection:
            listen["grpc_reflection"] = False
        # Every peer here is on 127.0.0.1, which the push relay's SSRF guard refuses
        # unless allow-listed (a test of the guard passes its own push_relay).
        relay = {"webhook_allowlist": ["127.0.0.1"]}
        # Each gateway its own state unless the test says otherwise.
        state = {"path": ":memory:"}
        config = parse_config({"listen": listen, "tenants": tenants, "push_relay": relay,
                               "state": state, **extra})
        server = Server(config)
        await server.start()
        servers.append(server)
        return f"http://127.0.0.1:{port}"

    yield make
    for server in servers:
        await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
