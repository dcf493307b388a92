"""Fixtures of the fuzz tests: two stub backends and a gateway in front of them.

Tenants: `t03` (the v0.3 stub, the default tenant), `t10` and `v1` (the v1.0 stub; `v1`
is the tenant name that collides with the v0.3 REST prefix). `max_body_bytes` is small
(64 KiB) so that bodies over the limit are cheap to send. The gRPC listener serves both
packages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import grpc
import pytest
from aiohttp import web

from tests.fuzz.fuzz_documents import V03, V10
from tests.fuzz.fuzz_run import FuzzTarget, LogWatch, structlog_is_capturable
from tests.fuzz.fuzz_stubs import Stub, build_stub_app
from tests.fuzz.fuzz_values import MAX_BODY_BYTES
from tests.support.helpers import MakeGateway, free_port


@pytest.fixture
async def stubs() -> AsyncIterator[dict[str, Stub]]:
    runners: list[web.AppRunner] = []
    out: dict[str, Stub] = {}
    for version in (V03, V10):
        stub = Stub(version)
        runner = web.AppRunner(build_stub_app(stub), access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        stub.url = f"http://127.0.0.1:{port}/"
        runners.append(runner)
        out[version] = stub
    yield out
    for runner in runners:
        await runner.cleanup()


def _backend(stub: Stub) -> dict[str, object]:
    return {"backend": {"url": stub.url, "version": stub.version, "binding": "JSONRPC",
                        "timeout": 5}}


@pytest.fixture
async def fuzz(make_gateway: MakeGateway, stubs: dict[str, Stub]) -> AsyncIterator[FuzzTarget]:
    assert structlog_is_capturable(), "structlog caches loggers: the log watch would be blind"
    grpc_port = free_port()
    base = await make_gateway({"t03": _backend(stubs[V03]), "t10": _backend(stubs[V10]),
                               "v1": _backend(stubs[V10])}, grpc_port=grpc_port,
                              default_tenant="t03", max_body_bytes=MAX_BODY_BYTES)
    async with aiohttp.ClientSession() as session, \
            grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        with LogWatch().watching() as logs:
            yield FuzzTarget(asyncio.get_running_loop(), base, session, channel,
                             list(stubs.values()), logs)
