"""Pruning that lands between a migration's two reads of an owner (its binding, then the
task index's row), on SQLite and Redis alike: pruning drops the row and binds its owner
in one step, so the binding read again finds what the first read missed."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from gateway.config.models import parse_config
from gateway.state import Store
from gateway.tasks.index import TaskIndex
from tests.state.conftest import MakeStore
from tests.support.helpers import v03
from tests.support.migration_calls import call, chosen, migration, ticket
from translators import operations as ops


def _missed_once(store: Store) -> None:
    """The store's first read of each binding answers as before the pruning wrote it."""
    real, missed = store.claimed, set()

    async def claimed(key: str) -> str | None:
        if key not in missed:
            missed.add(key)
            return None
        return await real(key)

    store.claimed = claimed  # type: ignore[method-assign]


async def test_a_task_and_a_conversation_pruned_between_the_two_reads_stay_the_candidates(
        make_store: MakeStore) -> None:
    # Both reads missed: the task was taken for the primary's (and followed there for
    # the life of the process), the conversation for a new one.
    store = make_store()
    index = TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:"}}), store)
    m = migration(share=0.0, store=store, conversations=index)
    await store.claim_all([("migration:shop:task:t-pruned", m.names.candidate),
                           ("migration:shop:context:c-pruned", m.names.candidate)], 60)
    _missed_once(store)
    got = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-pruned")))
    assert ticket(got).arm == "candidate"
    sent = await chosen(m, call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", context_id="c-pruned", parts=[pb.Part(text="and then?")]))))
    assert (ticket(sent).arm, ticket(sent).new) == ("candidate", False)
    await index.close()
