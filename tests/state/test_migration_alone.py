"""One process alone on its store (`state.tasks.wait_for_writes: auto`), SQLite and Redis
alike: a migration that looks up an owner reads the task index after this process's
records are written, not the store as it was before them."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from gateway.config.models import parse_config
from gateway.state import TaskRecord
from gateway.tasks.index import TaskIndex
from tests.state.conftest import MakeStore
from tests.support.helpers import v03
from tests.support.migration_calls import call, chosen, migration, ticket
from translators import operations as ops


async def test_a_task_the_candidate_made_a_moment_ago_is_read_as_the_candidates(
        make_store: MakeStore) -> None:
    # A candidate's stream that showed its conversation first (a message) and its task
    # only after: the task was not followed in the process, and its row waited for the
    # recorder's linger. A GetTask meanwhile read no row, took the task for the
    # primary's, and followed it there for as long as the process lived.
    store = make_store()
    index = TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:"}}), store, shared=False)
    assert not index.waits  # alone
    m = migration(share=0.0, store=store, conversations=index)
    assert index.recorder is not None
    index.recorder.add_all([TaskRecord("shop", "t-1", "c-1", "TASK_STATE_WORKING", 1.0, 1.0,
                                       backend="JSONRPC/1.0", agent=m.names.candidate)])
    got = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-1")))
    assert ticket(got).arm == "candidate"
    sent = await chosen(m, call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", context_id="c-1", parts=[pb.Part(text="and then?")]))))
    assert (ticket(sent).arm, ticket(sent).new) == ("candidate", False)
    await index.close()
