from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from helpers import MakeGateway, free_port

from gateway.app import Server
from gateway.config import parse_config
from gateway.demo_agent import start_demo_agent


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

    async def make(tenants: dict[str, Any], **extra: Any) -> str:
        port = free_port()
        config = parse_config({"listen": {"http": f"127.0.0.1:{port}"}, "tenants": tenants,
                               **extra})
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
