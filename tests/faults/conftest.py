"""Fixtures of the fault-injection suite: the misbehaving backend, and a gateway in front
of it with one tenant per client cell."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.faults.fault_backend import FaultBackend
from tests.faults.fault_cases import Cell, Fault
from tests.faults.fault_clients import FaultGateway, GatewayClient
from tests.faults.fault_wire import Dialect
from tests.support.helpers import MakeGateway, free_port


@pytest.fixture
async def fault_backend() -> AsyncIterator[FaultBackend]:
    backend = FaultBackend()
    await backend.start()
    yield backend
    await backend.stop()


@pytest.fixture
async def fault_gateway(make_gateway: MakeGateway, fault_backend: FaultBackend,
                        ) -> AsyncIterator[FaultGateway]:
    """Start a gateway (HTTP and gRPC listeners) whose tenants, one per cell, all reach
    `backend` misbehaving as `fault`; returns a client of it, closed at teardown."""
    clients: list[GatewayClient] = []

    async def make(backend: Dialect, fault: Fault, cells: list[Cell]) -> GatewayClient:
        tenants = {cell.tenant: await fault_backend.tenant(backend, fault) for cell in cells}
        grpc_port = free_port()
        # A short grace: streams a faulty gateway left open must not hold teardown.
        url = await make_gateway(tenants, grpc_port=grpc_port, shutdown_grace=0.5)
        client = await GatewayClient(url, f"127.0.0.1:{grpc_port}").__aenter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.__aexit__()
