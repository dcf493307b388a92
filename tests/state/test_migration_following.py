"""Which agent a conversation or a task follows, on SQLite and Redis alike, where the task
index records the agent of each task (gateway/migration/tenant.py): what is written, what
is only remembered, what another process reads, and what holds when the index misses
(one process alone on its store, pruning between two reads)."""

from __future__ import annotations

from collections.abc import Awaitable

from a2a.types import a2a_pb2 as pb

from gateway.config.models import parse_config
from gateway.migration.owners import Owners
from gateway.migration.tenant import TenantMigration
from gateway.migration.tenants import Migrations
from gateway.state import Store, TaskRecord
from gateway.tasks.index import TaskIndex
from tests.state.conftest import MakeStore
from tests.support.helpers import v03
from tests.support.migration_calls import call, chosen, migration, route, ticket
from translators import operations as ops


async def _new_conversation(m: TenantMigration, answer: pb.SendMessageResponse,
                            shadowed: bool = False) -> Awaitable[None] | None:
    """A message with no context through ``m``, answered with ``answer``: what
    ``answered`` returns (the bindings to wait for, or None)."""
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(m, sent)
    ticket(passage).shadowed = shadowed
    return m.answered(sent, ticket(passage), answer)


async def test_the_primarys_tasks_are_not_written_and_another_process_reads_one_once(
        make_store: MakeStore) -> None:
    # A task no one bound is the primary's in every process: only the conversation the
    # primary took is written (before its answer: no index row follows it here);
    # elsewhere its task is read once, then followed.
    here = migration(share=0.0, store=make_store())  # every new conversation: the primary
    waiting = await _new_conversation(here, pb.SendMessageResponse(
        task=pb.Task(id="t-p", context_id="c-p")))
    assert waiting is not None
    await waiting
    store = make_store()
    assert await store.claimed("migration:shop:context:c-p") == "primary"
    assert await store.claimed("migration:shop:task:t-p") is None
    there = migration(share=0.0, store=store)
    reads: list[str] = []
    real = store.claimed

    async def counted(key: str) -> str | None:
        reads.append(key)
        return await real(key)

    store.claimed = counted  # type: ignore[method-assign]
    for _ in range(2):
        got = await chosen(there, call(ops.GET_TASK, pb.GetTaskRequest(id="t-p")))
        assert ticket(got).arm == "primary"
    assert reads == ["migration:shop:task:t-p"]


def _message(context_id: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{context_id}", context_id=context_id, parts=[pb.Part(text="and then?")]))


async def test_a_conversation_under_way_before_the_migration_stays_with_the_primary(
        make_store: MakeStore) -> None:
    # The task index holds a task of conversation c-old, made before the migration; no
    # one bound it. Its next message names only the conversation: were it taken for a new
    # one, at share 1 it would go on at the candidate, which never saw it.
    store = make_store()
    await store.record_task(TaskRecord("shop", "t-old", "c-old", "TASK_STATE_COMPLETED",
                                       1.0, 1.0, backend="JSONRPC/0.3"))
    tasks = TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:"}}), store)
    m = migration(share=1.0, store=store, conversations=tasks)
    passage = await chosen(m, call(ops.SEND, _message("c-old")))
    assert ticket(passage).arm == "primary" and not ticket(passage).new
    await m.owners.flushed()  # bound for every process, whatever the index keeps later
    assert await make_store().claimed("migration:shop:context:c-old") == "primary"
    # A conversation the index does not hold is a new one: the share decides.
    assert ticket(await chosen(m, call(ops.SEND, _message("c-new")))).arm == "candidate"
    # Another tenant's conversation of that id is not this tenant's.
    other = TaskRecord("elsewhere", "t-x", "c-x", "TASK_STATE_COMPLETED", 1.0, 1.0)
    await store.record_task(other)
    assert ticket(await chosen(m, call(ops.SEND, _message("c-x")))).arm == "candidate"


async def test_with_no_share_left_a_conversation_recorded_with_the_candidate_goes_on_there(
        make_store: MakeStore) -> None:
    # Share 0 (shadow, or after a rollback): the index is still asked of a conversation
    # no one bound, for the row of its task follows it to the agent that served it.
    store = make_store()
    await store.record_tasks([
        TaskRecord("shop", "t-c", "c-cand", "TASK_STATE_COMPLETED", 1.0, 1.0,
                   backend="JSONRPC/1.0", agent="candidate"),
        TaskRecord("shop", "t-o", "c-old", "TASK_STATE_COMPLETED", 1.0, 1.0,
                   backend="JSONRPC/0.3")])
    m = migration(share=0.0, store=store, conversations=_index(store))
    chosen_ = {c: ticket(await chosen(m, call(ops.SEND, _message(c))))
               for c in ("c-cand", "c-old", "c-any")}
    assert {c: (t.arm, t.new) for c, t in chosen_.items()} == {
        "c-cand": ("candidate", False), "c-old": ("primary", False),
        "c-any": ("primary", True)}
    await m.owners.flushed()  # the candidate's is followed by its row, not bound
    assert await store.claimed("migration:shop:context:c-cand") is None
    assert await store.claimed("migration:shop:context:c-old") == "primary"
    # And a task of the candidate no one bound, by its row.
    got = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-c")))
    assert ticket(got).arm == "candidate"


async def test_the_candidates_new_conversation_waits_for_no_binding_where_the_index_follows(
        make_store: MakeStore) -> None:
    # Other processes read the store (`waits`): the candidate's new conversation waited
    # for its two bindings; the index writes the task's row, with its agent, before the
    # answer goes out anyway, so nothing is left to wait for or to write.
    store = make_store()
    m = migration(share=1.0, store=store, conversations=_index(store))
    assert m.owners.waits and m.follows_index
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(m, sent)
    assert ticket(passage).arm == "candidate" and sent.ctx.outcome.agent == m.names.candidate
    assert m.answered(sent, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-c", context_id="c-c"))) is None
    await m.owners.flushed()
    assert await store.claimed("migration:shop:context:c-c") is None
    assert await store.claimed("migration:shop:task:t-c") is None
    assert m.owners.known("migration:shop:task:t-c") == "candidate"
    assert m.owners.known("migration:shop:context:c-c") == "candidate"
    # Without the index, both are bound before the answer goes out, as before.
    bare = migration(share=1.0, store=store)
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(bare, sent)
    assert sent.ctx.outcome.agent is None
    waiting = bare.answered(sent, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-b", context_id="c-b")))
    assert waiting is not None
    await waiting
    assert await store.claimed("migration:shop:task:t-b") == bare.names.candidate


def _index(store: Store, shared: bool = True) -> TaskIndex:
    """The task index on ``store`` (``shared``: other processes read it too)."""
    return TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                   "state": {"path": ":memory:"}}), store, shared=shared)


async def _followed_to_the_candidate(m: TenantMigration, task_id: str,
                                     context_id: str) -> None:
    """A GetTask on ``task_id`` and a message in ``context_id`` both go to the candidate
    (the conversation is no new one)."""
    got = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id=task_id)))
    assert ticket(got).arm == "candidate"
    sent = await chosen(m, call(ops.SEND, _message(context_id)))
    assert (ticket(sent).arm, ticket(sent).new) == ("candidate", False)


async def test_alone_a_task_the_candidate_made_a_moment_ago_is_read_as_the_candidates(
        make_store: MakeStore) -> None:
    # One process alone on its store (`wait_for_writes: auto`). A candidate's stream
    # that showed its conversation first (a message) and its task only after: the task
    # was not followed in the process, and its row waited for the recorder's linger. A
    # GetTask meanwhile read no row, took the task for the primary's, and followed it
    # there for as long as the process lived: the index's reads write what waits first.
    store = make_store()
    index = _index(store, shared=False)
    assert not index.waits and index.recorder is not None
    m = migration(share=0.0, store=store, conversations=index)
    index.recorder.add_all([TaskRecord("shop", "t-1", "c-1", "TASK_STATE_WORKING", 1.0, 1.0,
                                       backend="JSONRPC/1.0", agent=m.names.candidate)])
    await _followed_to_the_candidate(m, "t-1", "c-1")
    await index.close()


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
    # Pruning drops a row and binds its owner in one step; landing between a process's
    # two reads (the binding, then the row), both missed: the task was taken for the
    # primary's (followed there for the life of the process), the conversation for a new
    # one. The binding is read again after the index misses.
    store = make_store()
    index = _index(store)
    m = migration(share=0.0, store=store, conversations=index)
    await store.claim_all([("migration:shop:task:t-pruned", m.names.candidate),
                           ("migration:shop:context:c-pruned", m.names.candidate)], 60)
    _missed_once(store)
    await _followed_to_the_candidate(m, "t-pruned", "c-pruned")
    await index.close()


async def test_the_primarys_new_conversation_is_followed_by_the_index_not_bound(
        make_store: MakeStore) -> None:
    # The index writes a row for the task anyway: that row, not a binding of its own,
    # keeps the conversation with the primary for every other process; pruning the
    # row binds it (Migrations.kept_owners), so the index forgets none silently.
    store = make_store()
    here = migration(share=0.0, store=store, conversations=_index(store))
    assert here.follows_index
    assert await _new_conversation(here, pb.SendMessageResponse(
        task=pb.Task(id="t-p", context_id="c-p"))) is None
    await here.owners.flushed()
    assert await store.claimed("migration:shop:context:c-p") is None  # nothing written
    assert here.owners.known("migration:shop:context:c-p") == "primary"  # followed here
    # Another process, the share now 1: the index's row of its task says it is under way.
    await store.record_task(TaskRecord("shop", "t-p", "c-p", "TASK_STATE_COMPLETED",
                                       1.0, 1.0, backend="JSONRPC/1.0"))
    there = migration(share=1.0, store=make_store(), conversations=_index(make_store()))
    assert ticket(await chosen(there, call(ops.SEND, _message("c-p")))).arm == "primary"
    # A new conversation answered by a message (no task: no row) is bound, before the
    # answer goes out.
    waiting = await _new_conversation(here, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-m", context_id="c-m")))
    assert waiting is not None
    await waiting
    assert await store.claimed("migration:shop:context:c-m") == "primary"


async def test_pruning_the_index_binds_the_primarys_conversations_of_a_migration(
        make_store: MakeStore) -> None:
    store = make_store()
    config = parse_config({"tenants": {"shop": {
        **v03("http://127.0.0.1:9/"), "migration": {
            "mode": "canary", "canary": {"share": 0.3},
            "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}}},
        "plain": v03("http://127.0.0.1:8/")}, "state": {"path": ":memory:"}})
    routes = {name: route(str(t.backend.url)) for name, t in config.tenants.items()}
    m = Migrations(config, routes, lambda name, c: route(str(c.url)), store,
                   conversations=TaskIndex(config, store))
    kept = m.kept_owners()
    assert list(kept) == ["shop"]
    await store.record_task(TaskRecord("shop", "t-1", "c-1", "TASK_STATE_COMPLETED", 1.0, 1.0))
    await store.record_task(TaskRecord("plain", "t-2", "c-2", "TASK_STATE_COMPLETED", 1.0, 1.0))
    assert await store.prune(2.0, kept) == 2
    assert await store.claimed("migration:shop:context:c-1") == "primary"
    assert await store.claimed("migration:plain:context:c-2") is None


async def test_a_shadowed_new_conversation_answered_by_a_message_is_bound(
        make_store: MakeStore) -> None:
    # A shadowed call's ids are read whole (its copy learns the message's task id too),
    # so its task id does not mean a task row: the conversation is bound as before.
    store = make_store()
    m = migration(share=0.0, store=store, conversations=_index(store))
    mirrored: list[tuple[str, str]] = []
    m.shadow.mirror = lambda call, answer, seconds, ids: mirrored.append(ids)  # type: ignore[method-assign]
    waiting = await _new_conversation(m, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-s", context_id="c-s")), shadowed=True)
    assert mirrored == [("t-s", "c-s")] and waiting is not None
    await waiting
    assert await store.claimed("migration:shop:context:c-s") == "primary"


async def test_a_primary_stream_is_bound_unless_its_first_event_is_a_task_the_index_records(
        make_store: MakeStore) -> None:
    # The index records a stream's task from its Task and status events (task_facts'
    # STATEFUL_EVENTS); an artifact chunk that names a task first leaves no row: bound.
    store = make_store()
    m = migration(share=0.0, store=store, conversations=_index(store))
    firsts = {"c-task": pb.StreamResponse(task=pb.Task(id="t-1", context_id="c-task")),
              "c-status": pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
                  task_id="t-2", context_id="c-status")),
              "c-chunk": pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
                  task_id="t-3", context_id="c-chunk"))}
    for first in firsts.values():
        streamed = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(
            message_id="m", parts=[pb.Part(text="hello")])))
        await ticket(await chosen(m, streamed)).before(first)
    await m.owners.flushed()
    assert {c: await store.claimed(f"migration:shop:context:{c}") for c in firsts} == {
        "c-task": None, "c-status": None, "c-chunk": "primary"}
    assert all(m.owners.known(f"migration:shop:context:{c}") == "primary" for c in firsts)


async def test_a_task_the_candidates_message_names_is_bound_for_the_index_has_no_row_of_it(
        make_store: MakeStore) -> None:
    # The index records a task from a Task or a status event, not from a message or an
    # artifact chunk naming it: such a task of the candidate is bound, as without the
    # index (a task no one bound would be taken for the primary's).
    store = make_store()
    m = migration(share=1.0, store=store, conversations=_index(store))
    waiting = await _new_conversation(m, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-m", context_id="c-m")))
    assert isinstance(waiting, Awaitable)  # before the answer goes out
    await waiting
    streamed = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    await ticket(await chosen(m, streamed)).before(pb.StreamResponse(
        artifact_update=pb.TaskArtifactUpdateEvent(task_id="t-a", context_id="c-a")))
    there = make_store()
    assert [await there.claimed(f"migration:shop:{key}") for key in (
        "task:t-m", "context:c-m", "task:t-a", "context:c-a")] == [m.names.candidate] * 4


async def test_the_primarys_new_conversation_a_message_answered_is_bound_before_the_answer(
        make_store: MakeStore) -> None:
    # No task row follows it: another worker asked for its next message before a
    # background write would take it for a new conversation, and might hash it to the
    # candidate.
    m = migration(share=0.0, store=make_store())
    c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    answer = pb.SendMessageResponse(message=pb.Message(message_id="a", context_id="c-9"))
    waiting = m.answered(c, ticket(await chosen(m, c)), answer)
    assert waiting is not None
    await waiting
    assert await Owners(make_store(), 60).owner("shop", "context", "c-9") == "primary"
