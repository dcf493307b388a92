"""Which calls of a tenant in migration mode bind their answer's ids to their agent
(gateway/migration/tenant.py, ticket.py): a new conversation and the candidate's
messages, read from the answer whether it was translated or passed through as the agent
sent it; not a call on a task whose owner is known."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from gateway.call import Call
from gateway.config.models import parse_config
from gateway.migration.owners import owner_key
from gateway.migration.sticky import CANDIDATE, PRIMARY
from gateway.state.sqlite_store import SqliteStore
from gateway.tasks.index import TaskIndex
from tests.support.helpers import v03
from tests.support.migration_calls import call, chosen, migration, ticket
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.dialects.jsonrpc import JSONRPC_V10
from translators.errors import a2a_error


def new_conversation() -> Call:
    return call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))


async def test_a_get_task_on_the_candidates_task_goes_there_and_may_be_passed_through(
        ) -> None:
    m = migration(share=0.0)
    await m.owners.claim("shop", "task", "t-c", CANDIDATE)
    c = call(ops.GET_TASK, pb.GetTaskRequest(id="t-c"))
    passage = await chosen(m, c)
    assert passage.backend is m.candidate.fixed_backend
    assert ticket(passage).arm == CANDIDATE
    assert ticket(passage).done
    # Its answer shows its own task: nothing to bind, nothing waited for.
    assert m.answered(c, ticket(passage), pb.Task(id="t-c", context_id="c-c")) is None


async def test_a_message_in_the_candidates_conversation_binds_the_task_it_starts() -> None:
    m = migration(share=0.0)
    await m.owners.claim("shop", "context", "c-c", CANDIDATE)
    c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", context_id="c-c", parts=[pb.Part(text="again")])))
    passage = await chosen(m, c)
    assert ticket(passage).arm == CANDIDATE
    bound = m.answered(c, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-new", context_id="c-c")))
    assert bound is not None
    await bound
    assert m.owners.known(owner_key("shop", "task", "t-new")) == CANDIDATE


async def test_a_new_conversation_passed_through_binds_the_ids_of_its_wire_answer() -> None:
    m = migration(share=1.0)
    c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    c.dialect = JSONRPC_V10  # the client's, which the agent speaks: passed through
    passage = await chosen(m, c)
    assert ticket(passage).arm == CANDIDATE
    answer = WireAnswer(b"", 200, {"jsonrpc": "2.0", "id": 1, "result": {"task": {
        "id": "t-w", "contextId": "c-w", "status": {"state": "TASK_STATE_WORKING"}}}})
    bound = m.answered(c, ticket(passage), answer)
    assert bound is not None
    await bound
    assert m.owners.known(owner_key("shop", "task", "t-w")) == CANDIDATE
    assert m.owners.known(owner_key("shop", "context", "c-w")) == CANDIDATE


async def test_the_primarys_new_conversation_binds_before_its_answer() -> None:
    m = migration(share=0.0)
    c = new_conversation()
    passage = await chosen(m, c)
    assert ticket(passage).arm == PRIMARY
    # No index row follows it here: bound before the answer, as the candidate's is (a
    # next message through another process must not take it for a new conversation).
    waiting = m.answered(c, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-p", context_id="c-p")))
    assert waiting is not None
    await waiting
    assert m.owners.known(owner_key("shop", "context", "c-p")) == PRIMARY
    assert m.owners.known(owner_key("shop", "task", "t-p")) == PRIMARY


async def test_the_primarys_get_task_binds_nothing() -> None:
    m = migration(share=1.0)
    passage = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-old")))
    assert passage.backend is m.primary.fixed_backend
    assert ticket(passage).done


async def test_a_candidates_failed_call_is_counted_against_it_without_a_hold() -> None:
    m = migration(share=1.0)
    c = new_conversation()
    passage = await chosen(m, c)
    assert ticket(passage).arm == CANDIDATE
    c.ctx.outcome.backend_seconds = 0.25
    ticket(passage).failed(a2a_error("BackendUnavailableError", "refused"))
    counts = m.stats.arms[CANDIDATE]
    assert (counts.calls, counts.errors, list(counts.latencies)) == (1, 1, [0.25])
    ticket(passage).failed(a2a_error("TaskNotFoundError", "no such task"))  # the caller's
    assert (counts.calls, counts.errors) == (2, 1)


async def test_a_new_conversation_that_falls_back_is_recorded_as_the_primarys() -> None:
    # The index records the agent that served a call with its tasks: a candidate that
    # refused the connection leaves the conversation to the primary, and its row says so.
    store = SqliteStore()
    index = TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:"}}), store)
    m = migration(share=1.0, conversations=index)
    assert m.follows_index
    c = new_conversation()
    passage = await chosen(m, c)
    assert ticket(passage).arm == CANDIDATE and c.ctx.outcome.agent == m.names.candidate
    ticket(passage).fell_back()
    assert ticket(passage).arm == PRIMARY and c.ctx.outcome.agent == PRIMARY
    # Outside a migration the index follows (none here), calls carry no agent.
    bare = new_conversation()
    await chosen(migration(share=1.0), bare)
    assert bare.ctx.outcome.agent is None
    await store.close()
