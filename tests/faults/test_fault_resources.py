"""1,000 faulty calls through one in-process gateway leave nothing behind: the process's
open file descriptors and resident memory after them are what they were after a warm-up.

The calls mix every fault, backend dialect, client dialect and mode of the matrix, in a
fixed pseudo-random order, CONCURRENCY at a time. The gateway, the fault backend and
the clients all live in this process, so a socket or a task leaked by any of them shows.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from collections import Counter

from tests.faults.fault_backend import FaultBackend
from tests.faults.fault_cases import FAULTS, Cell, Fault
from tests.faults.fault_clients import CELL_SECONDS, GatewayClient, Observation
from tests.faults.fault_wire import DIALECTS, Dialect
from tests.support.helpers import MakeGateway, free_port

CALLS = 1000
WARMUP = 200
CONCURRENCY = 50
RUN_SECONDS = 30.0  # the 1,000 calls take about 9 s on 2 cores when every fault is bounded
# A hard stop even if every call ran into its CELL_SECONDS bound.
HARD_STOP = (CALLS + WARMUP) / CONCURRENCY * CELL_SECONDS + 10
FD_SLACK = 10
RSS_SLACK_KB = 30 * 1024

Planned = tuple[str, Cell]  # tenant, client call


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def tenant_name(backend: Dialect, fault: Fault) -> str:
    return f"{backend.slug}-{fault.name}"


def plan(count: int, seed: int) -> list[Planned]:
    """`count` calls drawn from every (backend, fault, client, mode) of the matrix."""
    every = [(tenant_name(backend, fault), Cell(client, mode))
             for fault in FAULTS if fault.kind is not None
             for backend in DIALECTS if fault.applies_to(backend)
             for mode in fault.modes for client in DIALECTS]
    random.Random(seed).shuffle(every)
    return [every[i % len(every)] for i in range(count)]


async def run(client: GatewayClient, calls: list[Planned]) -> list[Observation]:
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(tenant: str, cell: Cell) -> Observation:
        async with slots:
            return await client.observe(cell.client, tenant, cell.mode)

    return await asyncio.gather(*(one(tenant, cell) for tenant, cell in calls))


async def settled_fds(limit: int, seconds: float = 5.0) -> int:
    """Open fds once closing sockets have closed (or after `seconds`)."""
    deadline = time.monotonic() + seconds
    while (fds := open_fds()) > limit and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return fds


async def test_a_thousand_faulty_calls_leave_no_fds_or_memory_behind(
        make_gateway: MakeGateway, fault_backend: FaultBackend) -> None:
    tenants = {tenant_name(backend, fault): await fault_backend.tenant(backend, fault)
               for fault in FAULTS if fault.kind is not None
               for backend in DIALECTS if fault.applies_to(backend)}
    grpc_port = free_port()
    url = await make_gateway(tenants, grpc_port=grpc_port, shutdown_grace=0.5)
    async with GatewayClient(url, f"127.0.0.1:{grpc_port}") as client:
        await asyncio.wait_for(run(client, plan(WARMUP, seed=1)), HARD_STOP)
        gc.collect()
        fds_before, rss_before = await settled_fds(open_fds()), rss_kb()
        started = time.monotonic()
        calls = plan(CALLS, seed=2)
        observed = await asyncio.wait_for(run(client, calls), HARD_STOP)
        took = time.monotonic() - started
        gc.collect()
        fds_after = await settled_fds(fds_before + FD_SLACK)
        rss_after = rss_kb()
    outcomes = Counter(obs.outcome for obs in observed)
    hung = [f"{tenant} <- {cell}" for (tenant, cell), obs in zip(calls, observed, strict=True)
            if obs.outcome == "hung"]
    report = (f"{CALLS} calls in {took:.1f}s, outcomes {dict(outcomes)}; open fds "
              f"{fds_before} -> {fds_after}; RSS {rss_before // 1024} -> {rss_after // 1024} MB"
              f"; hung: {hung[:5]}")
    print(report)
    assert fds_after <= fds_before + FD_SLACK, report
    assert rss_after - rss_before < RSS_SLACK_KB, report
    assert outcomes["hung"] == 0 and took < RUN_SECONDS, report
