"""The call pipeline: route a canonical call to its tenant's backend and back.

Ingress codecs build a :class:`Call`; this module picks the backend, applies the loss
policy and the cross-version stream rules, and hands back canonical results. It knows
nothing of any wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import BackendConfig, ConfigError, GatewayConfig
from gateway.egress.base import Backend
from gateway.egress.jsonrpc import JsonRpcBackend
from gateway.egress.rest import RestBackend
from translators import operations as ops
from translators.errors import a2a_error, invalid_params
from translators.loss import LossPolicy
from translators.versions import V03, VersionRules


def make_backend(config: BackendConfig, session: aiohttp.ClientSession,
                 p03_options: dict[str, Any]) -> Backend:
    if config.binding == "JSONRPC":
        return JsonRpcBackend(config, session)
    if config.binding == "HTTP+JSON":
        return RestBackend(config, session, p03_options)
    raise ConfigError(f"backend binding {config.binding} is not supported by this gateway "
                      f"build yet (backend {config.url}); use JSONRPC")


class Gateway:
    """Everything a request needs, built once per config."""

    def __init__(self, config: GatewayConfig, session: aiohttp.ClientSession) -> None:
        self.config = config
        self.version_rules = VersionRules(tuple(config.versions), config.strict_versions)
        # How v0.3 proto file bytes are read and written (the double-base64 quirk).
        self.p03_options: dict[str, Any] = {}
        self.backends: dict[str, Backend] = {
            name: make_backend(t.backend, session, self.p03_options)
            for name, t in config.tenants.items()}

    def backend_for(self, call: Call) -> Backend:
        tenant = call.ctx.tenant or self.config.default_tenant
        if tenant is None:
            raise invalid_params("no tenant given and no default_tenant configured")
        backend = self.backends.get(tenant)
        if backend is None:
            raise invalid_params(f"unknown tenant {tenant!r}", tenant=tenant)
        call.ctx.tenant = tenant
        call.ctx.backend_version = backend.config.version
        call.ctx.backend_binding = backend.config.binding
        return backend

    def _admit(self, call: Call) -> Backend:
        backend = self.backend_for(call)
        loss = call.ctx.loss
        loss.policy = self.config.loss_policy
        if loss.request and loss.policy is LossPolicy.REJECT:
            raise invalid_params(
                f"the request carries fields the other protocol version cannot express: "
                f"{', '.join(loss.request)} (loss_policy: reject)",
                fields=",".join(loss.request))
        return backend

    async def unary(self, call: Call) -> ProtoMessage | None:
        backend = self._admit(call)
        return await backend.unary(call)

    async def stream(self, call: Call) -> AsyncIterator[pb.StreamResponse]:
        backend = self._admit(call)
        first = True
        source = backend.stream(call)
        try:
            async for item in source:
                if first and call.op.name == ops.SUBSCRIBE and backend.config.version == V03 \
                        and not item.HasField("task"):
                    # v1.0 promises the Task first on subscribe; v0.3 made no promise (§3.8).
                    yield await self._current_task(backend, call)
                first = False
                call.ctx.events += 1
                yield item
        finally:
            await source.aclose()  # type: ignore[attr-defined]

    async def _current_task(self, backend: Backend, call: Call) -> pb.StreamResponse:
        request = pb.GetTaskRequest(id=call.request.id)  # type: ignore[attr-defined]
        get = Call(ops.BY_NAME[ops.GET_TASK], request, call.ctx)
        task = await backend.unary(get)
        if not isinstance(task, pb.Task):
            raise a2a_error("InvalidAgentResponseError", "backend returned no task to subscribe to")
        call.ctx.events += 1
        return pb.StreamResponse(task=task)

