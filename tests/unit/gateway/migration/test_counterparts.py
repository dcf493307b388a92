"""The candidate's ids for the primary's tasks and conversations, learned from shadow
copies of messages and put in the copies that name them (gateway/migration/counterparts)."""

from __future__ import annotations

import asyncio

from a2a.types import a2a_pb2 as pb

from gateway.migration.counterparts import Counterparts, outcome_ids
from translators.errors import a2a_error


def task(task_id: str, context_id: str) -> pb.SendMessageResponse:
    return pb.SendMessageResponse(task=pb.Task(id=task_id, context_id=context_id))


def follow_up(task_id: str = "", context_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id="m", task_id=task_id,
                                                    context_id=context_id))


async def test_a_copy_names_the_candidates_task_and_conversation() -> None:
    ids = Counterparts()
    ids.expect(outcome_ids(task("p-task", "p-ctx")))(task("c-task", "c-ctx"))
    get = pb.GetTaskRequest(id="p-task")
    await ids.translate(get, ids.wanted(get), timeout=1)
    assert get.id == "c-task"
    message = follow_up("p-task", "p-ctx")
    await ids.translate(message, ids.wanted(message), timeout=1)
    assert (message.message.task_id, message.message.context_id) == ("c-task", "c-ctx")


async def test_a_copy_waits_for_the_counterpart_its_message_copy_is_learning() -> None:
    ids = Counterparts()
    learn = ids.expect(outcome_ids(task("p-task", "p-ctx")))  # the message's copy is in flight
    get = pb.GetTaskRequest(id="p-task")
    translating = asyncio.ensure_future(ids.translate(get, ids.wanted(get), timeout=5))
    await asyncio.sleep(0)
    assert not translating.done()
    learn([pb.StreamResponse(task=pb.Task(id="c-task", context_id="c-ctx"))])  # a stream
    await translating
    assert get.id == "c-task"


async def test_ids_no_copy_created_and_copies_that_failed_stay_as_they_are() -> None:
    ids = Counterparts()
    ids.expect(outcome_ids(task("p-task", "p-ctx")))(a2a_error("BackendUnavailableError"))
    older, get = pb.GetTaskRequest(id="older"), pb.GetTaskRequest(id="p-task")
    for request in (older, get):
        await ids.translate(request, ids.wanted(request), timeout=1)
    assert (older.id, get.id) == ("older", "p-task")
    # A later message of that conversation learns it again.
    ids.expect(outcome_ids(task("p-task2", "p-ctx")))(task("c-task2", "c-ctx"))
    message = follow_up(context_id="p-ctx")
    await ids.translate(message, ids.wanted(message), timeout=1)
    assert message.message.context_id == "c-ctx"


async def test_a_message_that_starts_a_conversation_does_not_wait_for_itself() -> None:
    """A client may name a new conversation's contextId itself: the primary's answer
    shows it, and the copy's own lookup is taken before that answer is expected."""
    ids = Counterparts()
    message = follow_up(context_id="chosen")
    wanted = ids.wanted(message)
    learn = ids.expect(outcome_ids(task("p-task", "chosen")))
    await asyncio.wait_for(ids.translate(message, wanted, timeout=5), 1)
    assert message.message.context_id == "chosen"
    learn(task("c-task", "chosen"))


async def test_a_conversation_carried_on_keeps_its_counterpart() -> None:
    ids = Counterparts()
    ids.expect(outcome_ids(task("p-1", "p-ctx")))(task("c-1", "c-ctx"))
    learn = ids.expect(outcome_ids(task("p-2", "p-ctx")))  # a second task in the conversation
    message = follow_up(context_id="p-ctx")
    await asyncio.wait_for(ids.translate(message, ids.wanted(message), timeout=5), 1)
    assert message.message.context_id == "c-ctx"  # known: no wait for the second copy
    learn(task("c-2", "c-ctx"))
    get = pb.GetTaskRequest(id="p-2")
    await ids.translate(get, ids.wanted(get), timeout=1)
    assert get.id == "c-2"


async def test_a_counterpart_not_learned_in_time_leaves_the_id() -> None:
    ids = Counterparts()
    ids.expect(outcome_ids(task("p-task", "p-ctx")))  # never learned
    get = pb.GetTaskRequest(id="p-task")
    await ids.translate(get, ids.wanted(get), timeout=0.01)
    assert get.id == "p-task"


async def test_it_remembers_a_bounded_number_of_ids() -> None:
    ids = Counterparts(capacity=4)
    for i in range(3):
        ids.expect(outcome_ids(task(f"p-{i}", f"p-ctx-{i}")))(task(f"c-{i}", f"c-ctx-{i}"))
    oldest, newest = pb.GetTaskRequest(id="p-0"), pb.GetTaskRequest(id="p-2")
    assert ids.wanted(oldest) == {} and "id" in ids.wanted(newest)


async def test_whether_a_task_has_a_counterpart_known_or_coming() -> None:
    ids = Counterparts()
    learn = ids.expect(outcome_ids(task("p-task", "p-ctx")))
    assert ids.has_task(pb.GetTaskRequest(id="p-task"))  # coming
    assert not ids.has_task(pb.GetTaskRequest(id="older"))
    assert not ids.has_task(follow_up("older", "p-ctx"))
    assert ids.has_task(follow_up(context_id="anything"))  # names no task
    learn(a2a_error("BackendUnavailableError"))  # the copy failed: none
    assert not ids.has_task(pb.GetTaskRequest(id="p-task"))
