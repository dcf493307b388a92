"""Per-operation interface fallback (README "State" → "Interface fallback").

An agent's card may list several interfaces of one protocol version (JSON-RPC, HTTP+JSON,
gRPC) while one of them cannot do every operation: the a2a-sdk 0.3.26 agent's REST
server has no push-config delete route (405) and raises NotImplementedError for
push-config list (500), and its gRPC servicer lacks both (UNIMPLEMENTED), though the same
agent does them over JSON-RPC. When the interface in use says it cannot do an operation,
the call is made again on another interface of the same version from the card, and the
one that served it is remembered for that operation.

Only unary calls fall back (streams and pass-through keep their interface), and only on
answers that mean "not served here": UnsupportedOperation (gRPC UNIMPLEMENTED, HTTP 405
or 501), MethodNotFound; a plain HTTP 500 only for operations that change nothing (a
read done twice does no harm).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.cards.backend import BackendCard
from gateway.config.models import BackendConfig
from gateway.egress.base import Backend, EventBatches
from gateway.observability.metrics import FALLBACKS
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.errors import A2AError
from translators.versions import normalize_version
from translators.vocabulary import JSON

log = structlog.get_logger("a2a_gateway.fallback")

NOT_SERVED = frozenset({"UnsupportedOperationError", "MethodNotFoundError",
                        "MethodNotAllowedError"})
# Operations that change nothing at the agent: an HTTP 500 may mean "not implemented".
READS = frozenset({ops.GET_TASK, ops.LIST_TASKS, ops.PUSH_GET, ops.PUSH_LIST,
                   ops.PUSH_DELETE, ops.EXTENDED_CARD})

Interface = tuple[str, str]  # (binding, url) as the card lists it


def not_served(op: str, err: A2AError) -> bool:
    """Whether an error says the interface cannot do the operation (not that the call
    itself was wrong)."""
    if err.kind.name in NOT_SERVED:
        return True
    return (err.kind.name == "InternalError" and op in READS
            and err.metadata.get("http_status") == "500")


def alternatives(card: JSON, config: BackendConfig) -> list[JSON]:
    """The card's other interfaces of the backend's version, in the tenant's binding
    preference order (then the card's)."""
    order = [b for b in config.discovery.bindings if b != config.binding]
    out = []
    for entry in card.get("supportedInterfaces") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        binding = entry.get("protocolBinding")
        if binding in order and normalize_version(entry.get("protocolVersion")) \
                == config.version:
            out.append(entry)
    return sorted(out, key=lambda e: order.index(e["protocolBinding"]))


class FallbackBackend:
    """``primary``, and the other interfaces of its agent for what it cannot do."""

    def __init__(self, primary: Backend, tenant: str, card: BackendCard,
                 make: Callable[[BackendConfig], Backend]) -> None:
        self.primary = primary
        self.config = primary.config
        self.dialect = primary.dialect
        self._tenant = tenant
        self._card = card
        self._make = make
        self._others: dict[Interface, Backend] = {}
        self._served_by: dict[str, Interface] = {}  # operation → the interface that did it

    def _other(self, entry: JSON) -> tuple[Interface, Backend]:
        key = (str(entry["protocolBinding"]), str(entry["url"]))
        backend = self._others.get(key)
        if backend is None:
            config = self.config.model_copy(update={
                "url": entry["url"], "binding": entry["protocolBinding"],
                "tenant": entry.get("tenant") or self.config.tenant})
            backend = self._make(BackendConfig.model_validate(config.model_dump()))
            self._others[key] = backend
        return key, backend

    async def unary(self, call: Call) -> ProtoMessage | None:
        op = call.op.name
        known = self._served_by.get(op)
        if known is not None and known in self._others:
            try:
                return await self._on(self._others[known], known, call)
            except A2AError as err:
                if not not_served(op, err):
                    raise
                del self._served_by[op]  # it no longer does: start over
        try:
            return await self.primary.unary(call)
        except A2AError as err:
            if not not_served(op, err):
                raise
            return await self._fall_back(call, err)

    async def _fall_back(self, call: Call, refused: A2AError) -> ProtoMessage | None:
        parsed = await self._card.get()
        for entry in alternatives(parsed.p10, self.config) if parsed is not None else []:
            key, backend = self._other(entry)
            try:
                result = await self._on(backend, key, call)
            except A2AError as err:
                if not_served(call.op.name, err):
                    continue
                raise
            self._served_by[call.op.name] = key
            log.info("backend interface fallback", tenant=self._tenant,
                     operation=call.op.name, configured=self.config.binding,
                     serves=key[0], refused=refused.kind.reason)
            return result
        raise refused

    async def _on(self, backend: Backend, key: Interface, call: Call) -> ProtoMessage | None:
        # The other dialect's translation starts again from the canonical request: the
        # losses of the client's decoding stay, the refused interface's no longer count.
        call.ctx.loss.next_attempt()
        call.ctx.outcome.backend_binding = key[0]
        result = await backend.unary(call)
        FALLBACKS.labels(self._tenant, call.op.name, key[0]).inc()
        return result

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        return await self.primary.forward(call)

    def stream(self, call: Call) -> EventBatches:
        return self.primary.stream(call)

    async def close(self) -> None:
        for backend in self._others.values():
            await backend.close()
        await self.primary.close()
