"""A tenant's migration without a gateway around it: routes whose backend is a name, calls
as a client's JSON-RPC would make them, and the choice of their agent (the unit tests of
gateway/migration and the store tests of its bindings)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.backend import BackendConfig
from gateway.config.migration import MigrationConfig
from gateway.migration.tenant import Conversations, TenantMigration
from gateway.migration.ticket import Ticket
from gateway.pipeline.stages import Passage
from gateway.state import Store
from translators import operations as ops


def route(url: str) -> Any:
    config = BackendConfig(url=url, version="1.0")
    backend = SimpleNamespace(config=config, name=url)

    async def resolve(call: Call) -> Any:
        return backend

    async def card_json() -> None:
        return None  # no card known

    return SimpleNamespace(config=config, fixed_backend=backend, backend=resolve, label="",
                           card_json=card_json)


def migration(share: float, store: Store | None = None,
              conversations: Conversations | None = None,
              primary: str = "http://127.0.0.1:1/",
              candidate: str = "http://127.0.0.1:2/") -> TenantMigration:
    config = MigrationConfig.model_validate({
        "candidate": {"url": candidate, "version": "1.0"},
        "mode": "canary", "canary": {"share": share}})
    return TenantMigration("shop", config, route(primary), route(candidate), store,
                           conversations=conversations)


def call(op: str, request: Any) -> Call:
    return Call(ops.BY_NAME[op], request,
                CallContext(ClientFacts("JSONRPC"), "1.0", tenant="shop"))


async def chosen(m: TenantMigration, c: Call, streaming: bool = False) -> Passage:
    passage = Passage(cast(Any, m.primary), streaming=streaming,
                      backend=m.primary.fixed_backend)
    waiting = m.choose(c, passage)
    if waiting is not None:
        await waiting
    return passage


def ticket(passage: Passage) -> Ticket:
    assert isinstance(passage.migration, Ticket)
    return passage.migration
