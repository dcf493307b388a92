"""Every backend dialect x every fault that applies to it x every client dialect x
{unary, stream}: the exact error the caller gets, the events before it, and the time.

One test per (backend dialect, fault), so a failure names its case; its 12 client cells
run at once against one gateway, each on a tenant of its own.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.faults.fault_backend import FaultBackend
from tests.faults.fault_cases import FAULTS, Fault, cells
from tests.faults.fault_clients import CELL_SECONDS, FaultGateway
from tests.faults.fault_expect import verdict
from tests.faults.fault_wire import DIALECTS, Dialect

CASES = [pytest.param(backend, fault, id=f"{backend.name}-{fault.name}")
         for fault in FAULTS for backend in DIALECTS if fault.applies_to(backend)]
# Optional: a JSON line per cell, for a checklist of what fails (see README.md).
RESULTS = os.environ.get("A2A_FAULT_RESULTS")


@pytest.mark.parametrize(("backend", "fault"), CASES)
async def test_fault(backend: Dialect, fault: Fault, fault_backend: FaultBackend,
                     fault_gateway: FaultGateway) -> None:
    todo = cells(fault)
    client = await fault_gateway(backend, fault, todo)
    observed = await asyncio.wait_for(
        asyncio.gather(*(client.observe(c.client, c.tenant, c.mode) for c in todo)),
        CELL_SECONDS + 2)
    problems = [p for c, obs in zip(todo, observed, strict=True)
                if (p := verdict(fault, c, obs)) is not None]
    foreign = {seen for seen in fault_backend.seen if seen[0] != backend.name}
    if foreign:
        problems.append(f"the backend was called in another dialect: {sorted(foreign)}")
    if RESULTS:
        with open(RESULTS, "a", encoding="utf-8") as out:
            for c, obs in zip(todo, observed, strict=True):
                out.write(json.dumps({"backend": backend.name, "fault": fault.name,
                                      "client": c.client.name, "mode": c.mode,
                                      "ok": verdict(fault, c, obs) is None,
                                      "outcome": obs.outcome, "events": obs.events,
                                      "error": obs.error, "detail": obs.detail,
                                      "seconds": round(obs.seconds, 2)}) + "\n")
    assert not problems, f"{backend.name} backend, fault {fault.name}:\n  " + \
        "\n  ".join(problems)
