from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.demo.agent import build_app


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """An in-process demo agent (tests/integration/test_demo_agent*.py)."""
    # Short chunk interval keeps the suite fast; `slow` keeps its real 30 s so a
    # cancel that did not work could not pass by the task finishing on its own.
    async with TestClient(TestServer(build_app(chunk_interval=0.01))) as test_client:
        yield test_client
