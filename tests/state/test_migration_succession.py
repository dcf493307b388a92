"""A tenant's next migration, on the store the one before it wrote (SQLite and Redis
alike): once the earlier candidate is the tenant's backend, the conversations and tasks it
served stay with it; the new candidate gets only new conversations."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.config.migration import MigrationConfig
from gateway.config.models import parse_config
from gateway.migration.sticky import CANDIDATE
from gateway.migration.tenant import TenantMigration
from gateway.state import Store, TaskRecord
from gateway.tasks.index import TaskIndex
from tests.state.conftest import MakeStore
from tests.support.helpers import v03
from tests.support.migration_calls import call, chosen, migration, route, ticket
from translators import operations as ops

LEGACY, SUCCESSOR, NEXT = ("http://127.0.0.1:7001/", "http://127.0.0.1:7002/",
                           "http://127.0.0.1:7003/")


def _index(store: Store) -> TaskIndex:
    return TaskIndex(parse_config({"tenants": {"shop": v03(LEGACY)},
                                   "state": {"path": ":memory:"}}), store)


def _message(context_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{context_id}", context_id=context_id, parts=[pb.Part(text="hi")]))


async def _first_migration(store: Store) -> TenantMigration:
    """The legacy agent and its successor, at share 1: the successor served task t-1 of
    conversation c-1 (its row records it) and answered conversation c-m with a message
    naming task t-m (bound)."""
    first = migration(share=1.0, store=store, conversations=_index(store),
                      primary=LEGACY, candidate=SUCCESSOR)
    await store.record_tasks([TaskRecord("shop", "t-1", "c-1", "TASK_STATE_COMPLETED",
                                         1.0, 1.0, backend="JSONRPC/1.0",
                                         agent=first.names.written(CANDIDATE))])
    sent = call(ops.SEND, _message())
    passage = await chosen(first, sent)
    assert ticket(passage).arm == "candidate"
    waiting = first.answered(sent, ticket(passage), pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-m", context_id="c-m")))
    assert isinstance(waiting, Awaitable)
    await waiting
    return first


async def _arms(m: TenantMigration) -> dict[str, tuple[str, bool]]:
    chosen_ = {
        "task t-1": await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-1"))),
        "task t-m": await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-m"))),
        "conversation c-1": await chosen(m, call(ops.SEND, _message("c-1"))),
        "conversation c-m": await chosen(m, call(ops.SEND, _message("c-m"))),
        "new conversation": await chosen(m, call(ops.SEND, _message("c-new"))),
    }
    return {what: (ticket(p).arm, ticket(p).new) for what, p in chosen_.items()}


@pytest.mark.parametrize(("primary", "candidate", "share", "old", "new"), [
    # Cut over: the successor is the tenant's backend, and the next agent its candidate.
    pytest.param(SUCCESSOR, NEXT, 1.0, "primary", "candidate", id="successor-is-primary"),
    # The primary stays and the candidate is at another address: what the candidate
    # served is still the candidate's, as it was before its address was recorded.
    pytest.param(LEGACY, NEXT, 0.0, "candidate", "primary", id="candidate-moved"),
])
async def test_what_the_earlier_candidate_served_stays_with_that_agent(
        make_store: MakeStore, primary: str, candidate: str, share: float, old: str,
        new: str) -> None:
    store = make_store()
    await _first_migration(store)
    # Another process (nothing remembered) reads what the first migration recorded.
    second = migration(share=share, store=make_store(), conversations=_index(store),
                       primary=primary, candidate=candidate)
    assert await _arms(second) == {
        "task t-1": (old, False), "task t-m": (old, False),
        "conversation c-1": (old, False), "conversation c-m": (old, False),
        "new conversation": (new, True)}


async def test_a_reload_that_changes_an_agent_reads_the_owners_anew(
        make_store: MakeStore) -> None:
    store = make_store()
    first = await _first_migration(store)
    config = MigrationConfig.model_validate({"candidate": {"url": NEXT, "version": "1.0"},
                                             "mode": "canary", "canary": {"share": 1.0}})
    same = TenantMigration("shop", first.config, route(LEGACY), route(SUCCESSOR), store,
                           previous=first, conversations=_index(store))
    assert same.owners is first.owners  # the agents stay: what this process follows too
    # This process followed c-m to the candidate: after the successor becomes the
    # primary, that is the primary's, read anew from the store.
    assert first.owners.known("migration:shop:context:c-m") == "candidate"
    reloaded = TenantMigration("shop", config, route(SUCCESSOR), route(NEXT), store,
                               previous=first, conversations=_index(store))
    assert reloaded.owners is not first.owners
    assert (await _arms(reloaded))["conversation c-m"] == ("primary", False)
