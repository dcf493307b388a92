"""The misbehaving backend: one object that impersonates a backend of any of the six
dialects and misbehaves as a fault of fault_cases.py says.

    backend = FaultBackend(); await backend.start()
    tenants = {"t": await backend.tenant(Dialect("GRPC", "1.0"), BY_NAME["huge"])}

JSON-RPC and REST backends of both versions share one raw HTTP server (fault_http.py),
gRPC backends of both versions one grpc.aio server (fault_grpc.py); the fault travels
as the `x-fault` static header of the tenant's backend config. `down` points the tenant
at a loopback port nothing listens on; gRPC cuts get a port of their own (the proxy).
"""

from __future__ import annotations

from typing import Any

from tests.faults.fault_cases import Fault
from tests.faults.fault_grpc import CUT_RULES, GrpcFaultServer
from tests.faults.fault_http import HttpFaultServer
from tests.faults.fault_wire import Dialect
from tests.support.helpers import free_port

# The bounds the gateway must enforce for every fault backend (gateway/config/models.py).
BACKEND_BOUNDS: dict[str, Any] = {
    "timeout": 0.5,
    "connect_timeout": 0.5,
    "first_event_timeout": 0.5,
    "stream_idle_timeout": 0.5,
    "stream_max_duration": 1.5,
    "max_answer_bytes": 65536,
    "precheck": False,
}


class FaultBackend:
    def __init__(self) -> None:
        self.http = HttpFaultServer()
        self.grpc = GrpcFaultServer()
        self._down_port = free_port()

    async def start(self) -> None:
        await self.http.start()
        await self.grpc.start()

    async def stop(self) -> None:
        await self.http.stop()
        await self.grpc.stop()

    @property
    def seen(self) -> list[tuple[str, str, str]]:
        """(dialect, fault, mode) of every request that reached the backend."""
        return [*self.http.seen, *self.grpc.seen]

    async def _port(self, backend: Dialect, fault: Fault) -> int:
        if not fault.listens:
            return self._down_port
        if backend.binding != "GRPC":
            return self.http.port
        if fault.name in CUT_RULES:
            return await self.grpc.cut_port(fault.name)
        return self.grpc.port

    async def tenant(self, backend: Dialect, fault: Fault) -> dict[str, Any]:
        """A tenant entry whose backend speaks `backend` and misbehaves as `fault`."""
        port = await self._port(backend, fault)
        if backend.binding == "GRPC":
            url = f"127.0.0.1:{port}"
        else:  # the JSON-RPC endpoint, or the REST base
            url = f"http://127.0.0.1:{port}" + ("/" if backend.binding == "JSONRPC" else "")
        return {"backend": {"url": url, "version": backend.version, "binding": backend.binding,
                            "headers": {"x-fault": fault.name}, **BACKEND_BOUNDS}}
