"""Shadow copies against scripted agents: which tasks a copy leaves behind is cancelled, and
which ids a copy names (gateway/migration/shadow.py, counterparts.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, cast

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.backend import BackendConfig
from gateway.config.migration import MigrationConfig, RollbackConfig, ShadowConfig
from gateway.migration import shadow as shadow_module
from gateway.migration.counterparts import outcome_ids
from gateway.migration.shadow import Shadow
from gateway.migration.spare import MAX_PASSES
from gateway.migration.stats import TenantStats
from gateway.migration.tenant import TenantMigration
from gateway.migration.ticket import Ticket
from tests.support.migration_calls import migration, route
from tests.support.waiting import wait_until
from translators import operations as ops
from translators.answer_diff import Difference
from translators.dialects.jsonrpc import JSONRPC_V10
from translators.errors import a2a_error

INPUT = pb.TaskState.TASK_STATE_INPUT_REQUIRED
WORKING = pb.TaskState.TASK_STATE_WORKING
DONE = pb.TaskState.TASK_STATE_COMPLETED
CANCELED = pb.TaskState.TASK_STATE_CANCELED


class Agent:
    """`ask` opens a task that waits for input, which the next message completes; `work`
    one that keeps working; GetTask and CancelTask as an agent answers them."""

    def __init__(self, name: str, tasks: dict[str, pb.Task] | None = None,
                 version: str = "1.0") -> None:
        self.name = name
        self.config = BackendConfig(url=f"http://{name}/", version=version)
        self.tasks = {} if tasks is None else tasks  # shared: one storage for two agents
        self.ids = itertools.count()
        self.calls: list[tuple[str, Any]] = []

    async def unary(self, call: Call) -> Any:
        request: Any = call.request
        self.calls.append((call.op.name, request))
        if call.op.name == ops.GET_TASK:
            return self._task(request.id)
        if call.op.name == ops.CANCEL:
            task = self._task(request.id)
            task.status.state = CANCELED
            return task
        message = request.message
        if message.task_id:
            task = self._task(message.task_id)
            if task.status.state != INPUT:
                raise a2a_error("UnsupportedOperationError", "the task is over")
            task.status.state = DONE
            return pb.SendMessageResponse(task=task)
        n = next(self.ids)
        task = pb.Task(id=f"{self.name}-task-{n}", context_id=message.context_id
                       or f"{self.name}-ctx-{n}")
        task.status.state = INPUT if message.parts[0].text == "ask" else WORKING
        self.tasks[task.id] = task
        return pb.SendMessageResponse(task=task)

    def _task(self, task_id: str) -> pb.Task:
        if task_id not in self.tasks:
            raise a2a_error("TaskNotFoundError", "no such task")
        return self.tasks[task_id]

    def sent(self, op: str) -> list[Any]:
        return [request for name, request in self.calls if name == op]


def make_shadow(primary: Agent, candidate: Agent, **config: Any) -> Shadow:
    stats = TenantStats(RollbackConfig(), keep=10)

    async def resolve_candidate(_: Call) -> Any:
        return candidate

    async def resolve_primary(_: Call) -> Any:
        return primary

    settings = ShadowConfig.model_validate({"operations": ["SendMessage", "GetTask"],
                                            **config})
    return Shadow("t", settings, 10, stats, resolve_candidate, resolve_primary)


def call(op: str, request: Any) -> Call:
    return Call(ops.BY_NAME[op], request, CallContext(ClientFacts("JSONRPC"), "1.0", tenant="t"),
                dialect=JSONRPC_V10)


def message(text: str, task_id: str = "", context_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id="m", role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)], task_id=task_id,
        context_id=context_id))


async def answered(shadow: Shadow, primary: Agent, op: str, request: Any) -> Any:
    """The primary answers ``request``; the shadow copies it; once the copy is over (its
    comparison, and the cancel of a task it left), the answer."""
    made = call(op, request)
    answer = await primary.unary(made)
    shadow.mirror(made, answer, 0.001, outcome_ids(answer))
    assert shadow.in_flight == 1
    await wait_until(lambda: shadow.in_flight == 0, "the copy's end")
    return answer


async def test_a_conversation_that_waits_for_its_client_is_carried_on_at_the_candidate(
        ) -> None:
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate)
    first = await answered(shadow, primary, ops.SEND, message("ask"))
    await answered(shadow, primary, ops.SEND, message("Paris", first.task.id,
                                                       first.task.context_id))
    await answered(shadow, primary, ops.GET_TASK, pb.GetTaskRequest(id=first.task.id))
    # Not cancelled while it waited for input: the follow-up's copy completed it.
    assert candidate.sent(ops.CANCEL) == []
    assert candidate.tasks["c-task-0"].status.state == DONE
    assert [r.message.task_id for r in candidate.sent(ops.SEND)] == ["", "c-task-0"]
    assert [r.id for r in candidate.sent(ops.GET_TASK)] == ["c-task-0"]
    assert shadow.stats.shadow.agreed == 3 and not shadow.stats.disagreements


class _Finishes(Agent):
    """Completes at once what the primary leaves waiting for input: every message's
    copy disagrees."""

    async def unary(self, call: Call) -> Any:
        answer = await super().unary(call)
        if call.op.name == ops.SEND:
            answer.task.status.state = DONE
        return answer


async def test_a_disagreement_shows_no_push_config_of_the_client() -> None:
    # The copy was sent without it, but the report showed the client's request whole:
    # its webhook's address, token and credentials, on the admin page and API.
    primary, candidate = Agent("p"), _Finishes("c")
    shadow = make_shadow(primary, candidate)
    request = message("ask")
    push = request.configuration.task_push_notification_config
    push.url, push.token = "https://hooks.example/secret-path?sig=abc", "CLIENT-TOKEN"
    push.authentication.scheme, push.authentication.credentials = "Bearer", "CLIENT-CRED"
    await answered(shadow, primary, ops.SEND, request)
    [shown] = shadow.stats.disagreements
    text = json.dumps(shown)
    assert not any(secret in text for secret in ("hooks.example", "CLIENT-TOKEN",
                                                 "CLIENT-CRED"))
    assert "ask" in json.dumps(shown["request"])  # the rest of the request is shown
    assert request.configuration.task_push_notification_config.token == "CLIENT-TOKEN"


async def test_a_task_a_message_copy_left_working_is_cancelled() -> None:
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate)
    sent = await answered(shadow, primary, ops.SEND, message("work"))
    assert [r.id for r in candidate.sent(ops.CANCEL)] == ["c-task-0"]  # the copy's own
    assert primary.tasks[sent.task.id].status.state == WORKING


async def test_a_task_a_get_task_copy_found_is_never_cancelled() -> None:
    """Read-only copies, for a candidate over the primary's own data: a GetTask copy finds
    the client's task, still working. The shadow cancelled it."""
    tasks: dict[str, pb.Task] = {}
    primary, candidate = Agent("p", tasks), Agent("c", tasks)
    shadow = make_shadow(primary, candidate, operations=["GetTask"])
    sent = await primary.unary(call(ops.SEND, message("work")))
    await answered(shadow, primary, ops.GET_TASK, pb.GetTaskRequest(id=sent.task.id))
    assert [r.id for r in candidate.sent(ops.GET_TASK)] == [sent.task.id]  # the same id
    assert candidate.sent(ops.CANCEL) == []
    assert tasks[sent.task.id].status.state == WORKING
    assert shadow.stats.shadow.agreed == 1


async def test_with_messages_copied_a_task_without_a_counterpart_is_not_copied() -> None:
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate)
    older = await primary.unary(call(ops.SEND, message("ask")))  # before the shadowing
    for request in (pb.GetTaskRequest(id=older.task.id),
                    message("Paris", older.task.id, older.task.context_id)):
        assert not shadow.wants(call(ops.GET_TASK if isinstance(request, pb.GetTaskRequest)
                                     else ops.SEND, request))
    first = call(ops.SEND, message("ask"))
    assert shadow.wants(first)
    opened = await primary.unary(first)
    shadow.mirror(first, opened, 0.001, outcome_ids(opened))  # its copy on its way
    assert shadow.wants(call(ops.GET_TASK, pb.GetTaskRequest(id="p-task-1")))
    await wait_until(lambda: shadow.in_flight == 0, "the copy's end")


async def test_the_a_a_copies_carry_on_their_own_conversation() -> None:
    """With `aa`, a follow-up's copy to the primary names the task of the first message's
    A/A copy, not the client's (which the real follow-up has completed): else every
    follow-up is 'noise', and the candidate's own differences there are never reported."""
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate, aa=True)
    first = await answered(shadow, primary, ops.SEND, message("ask"))
    await answered(shadow, primary, ops.SEND, message("Paris", first.task.id,
                                                       first.task.context_id))
    # The client's task p-task-0; the A/A copy's p-task-1, completed by the second copy.
    assert [r.message.task_id for r in primary.sent(ops.SEND)] == [
        "", "", "p-task-0", "p-task-1"]
    counts = shadow.stats.shadow
    assert (counts.agreed, counts.aa_compared, dict(counts.noise)) == (2, 2, {})


async def test_an_answer_passed_through_is_read_by_the_copy_not_on_the_clients_path(
        ) -> None:
    # The client's call stays passed through: the copy gets a function that reads the
    # primary's answer, and the ids that answer shows (read from its wire form).
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate)
    made = call(ops.SEND, message("ask"))
    answer = await primary.unary(made)
    reads: list[str] = []

    def read() -> Any:
        reads.append("read")
        return answer

    shadow.mirror(made, read, 0.001, (answer.task.id, answer.task.context_id))
    assert reads == []  # not read while the client's answer goes out
    await wait_until(lambda: shadow.in_flight == 0, "the copy's end")
    assert reads == ["read"]
    assert shadow.stats.shadow.agreed == 1
    # The ids given were learned: a follow-up's copy names the candidate's own task.
    await answered(shadow, primary, ops.GET_TASK, pb.GetTaskRequest(id=answer.task.id))
    assert [r.id for r in candidate.sent(ops.GET_TASK)] == ["c-task-0"]


async def test_a_copy_is_sent_and_compared_only_when_the_loop_has_nothing_else_due(
        ) -> None:
    # A copy runs in the loop's spare time (gateway/migration/spare.py): the work due for
    # the clients' calls goes first, here passes of it started with the copy (fewer than
    # the passes after which a copy goes on anyway).
    tasks: dict[str, pb.Task] = {}  # one storage: a successor over the same data
    primary, candidate = Agent("p", tasks), Agent("c", tasks)
    shadow = make_shadow(primary, candidate, operations=["GetTask"])
    made = call(ops.GET_TASK, pb.GetTaskRequest(id="p-task-0"))
    await primary.unary(call(ops.SEND, message("ask")))
    answer = await primary.unary(made)
    clients: list[int] = []
    loop = asyncio.get_running_loop()

    def client_work(left: int) -> None:
        clients.append(left)
        if left > 1:
            loop.call_soon(client_work, left - 1)

    seen_at: list[int] = []
    sent = candidate.unary

    async def noted(copy: Call) -> Any:
        seen_at.append(len(clients))
        return await sent(copy)

    candidate.unary = noted  # type: ignore[method-assign]
    shadow.mirror(made, answer, 0.001, outcome_ids(answer))
    passes = MAX_PASSES - 2
    loop.call_soon(client_work, passes)
    await wait_until(lambda: shadow.in_flight == 0, "the copy's end")
    assert seen_at == [passes]  # sent after all the passes of the clients' work
    assert shadow.stats.shadow.agreed == 1


async def test_a_reload_keeps_the_candidates_ids_while_the_candidate_is_the_same() -> None:
    # A conversation copied before a reload goes on at the candidate under its own ids.
    def reloaded(before: TenantMigration, candidate: str) -> TenantMigration:
        config = MigrationConfig.model_validate({
            "candidate": {"url": candidate, "version": "1.0"}, "mode": "shadow",
            "shadow": {"share": 0.5, "operations": ["SendMessage", "GetTask"]}})
        return TenantMigration("shop", config, before.primary, route(candidate), None,
                               previous=before)

    before = migration(share=0.0)
    learn = before.shadow.counterparts.expect(("t-primary", "c-primary"))
    learn(pb.Task(id="t-candidate", context_id="c-candidate"))
    carried_on = pb.SendMessageRequest(message=pb.Message(
        message_id="m", context_id="c-primary", task_id="t-primary"))
    same = reloaded(before, str(before.candidate.config.url))
    wanted = same.shadow.counterparts.wanted(carried_on)
    assert {name: await f for name, f in wanted.items()} == {
        "task_id": "t-candidate", "context_id": "c-candidate"}
    assert same.shadow.aa_counterparts is before.shadow.aa_counterparts  # the same primary
    other = reloaded(same, "http://127.0.0.1:3/")  # another agent: its ids are not these
    assert other.shadow.counterparts.wanted(carried_on) == {}


def chunk(size: int) -> pb.StreamResponse:
    event = pb.StreamResponse()
    event.artifact_update.task_id = "t-1"
    event.artifact_update.artifact.parts.add().raw = b"x" * size
    return event


async def test_a_primary_stream_past_max_bytes_is_not_kept_nor_copied() -> None:
    config = MigrationConfig.model_validate({
        "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}, "mode": "shadow",
        "shadow": {"share": 1.0, "operations": ["SendStreamingMessage"],
                   "max_bytes": 10_000}})
    m = TenantMigration("shop", config, route("http://127.0.0.1:1/"),
                        route("http://127.0.0.1:2/"), None)
    streamed = call(ops.STREAM, message("stream"))
    held = Ticket(m, streamed, "primary", new=False, streaming=True)
    held.events = []
    for _ in range(3):  # the client gets every event whatever is kept of them
        assert held.event(chunk(4_000)) == (chunk(4_000),)
    assert held.events is None and m.stats.shadow.skipped == 1
    assert await held.end() == ()  # no copy made
    assert m.shadow.in_flight == 0


async def read_events(shadow: Shadow, agent: Agent) -> list[pb.StreamResponse]:
    """A streamed copy's events as ``shadow`` reads them from ``agent``."""
    events: list[pb.StreamResponse] = []
    await shadow._events(cast(Any, agent), call(ops.STREAM, message("stream")), events)
    return events


class _ClosesEarly(Agent):
    """Streams its task working, then closes the stream before the status that ends it
    (as a v0.3 agent may); its task is completed by then."""

    said = ""  # the text of the status that ends the task

    def stream(self, copy: Call) -> Any:
        task = pb.Task(id="t-early", context_id="c-early")
        task.status.state = DONE
        if self.said:
            task.status.message.parts.add().text = self.said
        self.tasks[task.id] = task

        async def batches() -> Any:
            yield [pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
                task_id="t-early", context_id="c-early",
                status=pb.TaskStatus(state=WORKING)))]
        return batches()


async def test_a_v03_copys_stream_is_settled_as_the_clients_is() -> None:
    # The primary's recorded events went through the v0.3 repair that ends a stream
    # with its task's status: a v0.3 copy read raw differed in its shape every time.
    old = _ClosesEarly("candidate", version="0.3")
    shadow = make_shadow(Agent("primary"), old)
    events = await read_events(shadow, old)
    assert [e.status_update.status.state for e in events] == [WORKING, DONE]
    assert [name for name, _ in old.calls] == [ops.GET_TASK]
    # A v1.0 stream ends where its agent ends it: nothing is read after it.
    new = _ClosesEarly("candidate")
    events = await read_events(make_shadow(Agent("primary"), new), new)
    assert [e.status_update.status.state for e in events] == [WORKING]
    assert new.calls == []
    # The settled status is bounded as the agent's own events are (max_bytes).
    big = _ClosesEarly("candidate", version="0.3")
    shadow = make_shadow(Agent("primary"), big, max_bytes=5_000)
    big.said = "x" * 10_000
    events = await read_events(shadow, big)
    assert [e.status_update.status.state for e in events] == [WORKING]


async def test_a_copy_reads_no_further_than_max_bytes() -> None:
    class Streaming(Agent):
        def stream(self, copy: Call) -> Any:
            async def batches() -> Any:
                for _ in range(50):
                    yield [chunk(1_000)]
                    self.calls.append(("read", None))
            return batches()

    candidate = Streaming("candidate")
    shadow = make_shadow(Agent("primary"), candidate, max_bytes=5_500)
    events = await read_events(shadow, candidate)
    assert len(events) == 5 and len(candidate.calls) <= 5


def test_a_disagreement_keeps_a_bounded_list_of_differences() -> None:
    found = [Difference("data", f"artifacts[0].parts[0].data[{n}]", str(n), f'"{n}"')
             for n in range(150)]
    made = call(ops.GET_TASK, pb.GetTaskRequest(id="t-1"))
    kept = shadow_module._disagreement(made, pb.Task(id="a"), pb.Task(id="b"), 0.001, 0.002,
                                       found)
    assert len(kept["differences"]) == shadow_module.SHOWN_DIFFERENCES == 100
    assert kept["differences"][-1]["path"] == "artifacts[0].parts[0].data[99]"
    assert kept["differences_not_shown"] == 50
    few = shadow_module._disagreement(made, pb.Task(id="a"), pb.Task(id="b"), 0.001, 0.002,
                                      found[:3])
    assert (len(few["differences"]), few["differences_not_shown"]) == (3, 0)


class _StopsMidway(Agent):
    """Streams its task working, then fails (``breaks``) or waits until the copy ends."""

    def __init__(self, name: str, breaks: bool) -> None:
        super().__init__(name)
        self.breaks = breaks

    def stream(self, copy: Call) -> Any:
        self.calls.append((ops.STREAM, copy.request))
        task = pb.Task(id=f"{self.name}-streamed", context_id=f"{self.name}-ctx")
        task.status.state = WORKING
        self.tasks[task.id] = task

        async def batches() -> Any:
            yield [pb.StreamResponse(task=task)]
            if self.breaks:
                raise a2a_error("BackendUnavailableError", "the connection broke")
            await asyncio.Event().wait()
        return batches()


@pytest.mark.parametrize("breaks", [True, False])
async def test_a_streamed_copy_that_ends_midway_cancels_the_task_it_started(
        breaks: bool) -> None:
    # Its events were dropped with the error (a broken connection, `shadow.timeout`), so
    # the task it had started ran on at the candidate for good.
    primary, candidate = Agent("p"), _StopsMidway("c", breaks)
    shadow = make_shadow(primary, candidate, operations=["SendStreamingMessage"],
                         timeout=0.05)
    made = call(ops.STREAM, message("stream"))
    shown = [pb.StreamResponse(task=pb.Task(id="p-1", context_id="p-ctx",
                                            status=pb.TaskStatus(state=DONE)))]
    shadow.mirror(made, shown, 0.001, ("p-1", "p-ctx"))
    await wait_until(lambda: shadow.in_flight == 0, "the copy's end")
    assert [r.id for r in candidate.sent(ops.CANCEL)] == ["c-streamed"]
    learned = shadow.counterparts.wanted(pb.GetTaskRequest(id="p-1"))  # its follow-ups'
    assert [await future for future in learned.values()] == ["c-streamed"]


async def test_the_a_a_copys_task_is_cancelled_at_the_primary_too() -> None:
    primary, candidate = Agent("p"), Agent("c")
    shadow = make_shadow(primary, candidate, aa=True)
    sent = await answered(shadow, primary, ops.SEND, message("work"))
    assert [r.id for r in candidate.sent(ops.CANCEL)] == ["c-task-0"]
    assert [r.id for r in primary.sent(ops.CANCEL)] == ["p-task-1"]  # the A/A copy's
    assert primary.tasks[sent.task.id].status.state == WORKING  # the client's goes on


async def test_a_copy_cut_off_by_its_config_closing_cancels_the_task_it_started() -> None:
    primary, candidate = Agent("p"), _StopsMidway("c", breaks=False)
    shadow = make_shadow(primary, candidate, operations=["SendStreamingMessage"])
    shadow.mirror(call(ops.STREAM, message("stream")), [], 0.001, ("", ""))
    await wait_until(lambda: candidate.sent(ops.STREAM), "the copy's stream opened")
    await wait_until(lambda: "c-streamed" in candidate.tasks, "its task started")
    await shadow.close()
    assert [r.id for r in candidate.sent(ops.CANCEL)] == ["c-streamed"]


class _SlowToCancel(Agent):
    """Its first CancelTask waits (until the copy is cut off); the next is answered."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.waiting = asyncio.Event()

    async def unary(self, call: Call) -> Any:
        if call.op.name == ops.CANCEL and not self.sent(ops.CANCEL):
            self.calls.append((call.op.name, call.request))
            self.waiting.set()
            await asyncio.Event().wait()
        return await super().unary(call)


async def test_a_config_closing_while_a_copys_task_is_cancelled_cuts_off_no_cancel() -> None:
    # The candidate's CancelTask was on its way when the config closed: it was cut off,
    # and the A/A copy's task at the primary, next in line, was never cancelled.
    primary, candidate = Agent("p"), _SlowToCancel("c")
    shadow = make_shadow(primary, candidate, aa=True)
    made = call(ops.SEND, message("work"))
    shadow.mirror(made, await primary.unary(made), 0.001, ("p-task-0", "p-ctx-0"))
    await wait_until(candidate.waiting.is_set, "the candidate's cancel on its way")
    await shadow.close()
    assert [r.id for r in candidate.sent(ops.CANCEL)] == ["c-task-0", "c-task-0"]
    assert candidate.tasks["c-task-0"].status.state == CANCELED
    assert [r.id for r in primary.sent(ops.CANCEL)] == ["p-task-1"]
