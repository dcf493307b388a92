"""The candidate's own ids for the primary's tasks and conversations, learned from shadow
copies. A copy of a SendMessage makes the candidate start a task (and a conversation) of
its own, with ids of its own; a later copy that names the primary's task or conversation
(a GetTask, a message that carries the conversation on) is sent with the candidate's ids
— with the primary's, the candidate could only answer that it knows no such task, and
every such comparison would disagree however alike the two agents are.

Ids no copy created (a task from before the shadowing, a candidate that shares the
primary's storage) are sent as they are. A copy that names an id whose counterpart is
still being learned (its SendMessage copy in flight) waits for it, up to the shadow
timeout. Per process and bounded: a copy through another replica, or of a conversation
whose counterpart was forgotten, names the primary's ids."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators.answer_view import Outcome
from translators.errors import A2AError
from translators.task_facts import canonical_ids

CAPACITY = 10_000  # ids remembered per tenant and process (the oldest go first)
Learn = Callable[[Outcome | None], None]
Wanted = dict[str, "asyncio.Future[str]"]  # a request's id field -> its counterpart


def outcome_ids(outcome: Outcome | None) -> tuple[str, str]:
    """The ids an answer shows; a stream's: its first event's that shows any."""
    if outcome is None or isinstance(outcome, A2AError):
        return "", ""
    if isinstance(outcome, Sequence):
        for event in outcome:
            ids = canonical_ids(event)
            if any(ids):
                return ids
        return "", ""
    return canonical_ids(outcome)


class Counterparts:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        # "task:<primary id>" / "context:<primary id>" -> the candidate's id ("": none)
        self._ids: OrderedDict[str, asyncio.Future[str]] = OrderedDict()

    def wanted(self, request: ProtoMessage) -> Wanted:
        """The counterparts a copy of ``request`` names, as known when it is made: taken
        before the copy's own answer is expected (a message that starts a conversation
        must not wait for the counterpart it will itself teach)."""
        found: Wanted = {}
        for name, kind, ident in _id_fields(request):
            future = self._ids.get(f"{kind}:{ident}") if ident else None
            if future is not None:
                found[name] = future
        return found

    def has_task(self, request: ProtoMessage) -> bool:
        """Whether the task ``request`` names (if it names one) has a counterpart, or one
        is being learned."""
        for _, kind, ident in _id_fields(request):
            if kind == "task" and ident:
                return _known_or_coming(self._ids.get(f"task:{ident}"))
        return True

    def expect(self, primary: tuple[str, str]) -> Learn:
        """A copy of a message whose primary answer showed the ids ``primary`` (task,
        context: counterparts.outcome_ids) is on its way to the candidate: those with no
        counterpart yet get one, from the candidate's answer given to the returned
        function (None when the copy failed: then they have none)."""
        pending: dict[str, asyncio.Future[str]] = {}
        for kind, ident in zip(("task", "context"), primary, strict=True):
            key = f"{kind}:{ident}"
            if not ident or _known_or_coming(self._ids.get(key)):
                continue  # a conversation carried on: its counterpart is known or coming
            pending[key] = self._ids[key] = asyncio.get_running_loop().create_future()
            self._ids.move_to_end(key)
        while len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

        def learn(candidate: Outcome | None) -> None:
            task_id, context_id = outcome_ids(candidate)
            theirs = {"task": task_id, "context": context_id}
            for key, future in pending.items():
                if not future.done():
                    future.set_result(theirs[key.partition(":")[0]])

        return learn

    @staticmethod
    async def translate(request: ProtoMessage, wanted: Wanted, timeout: float) -> None:
        """Put the candidate's ids in ``request`` (a copy's), in place; an id whose
        counterpart is not learned within ``timeout`` seconds (or has none) stays."""
        if not wanted:
            return
        target: Any = request.message if isinstance(request, pb.SendMessageRequest) else request
        try:
            async with asyncio.timeout(timeout):
                for name, future in wanted.items():
                    theirs = await asyncio.shield(future)
                    if theirs:
                        setattr(target, name, theirs)
        except TimeoutError:
            return


def _known_or_coming(future: asyncio.Future[str] | None) -> bool:
    """A counterpart learned, or being learned (not one whose copy failed: it has none)."""
    return future is not None and (not future.done() or bool(future.result()))


def _id_fields(request: ProtoMessage) -> list[tuple[str, str, str]]:
    """(field, kind, id) of the ids a copied request names."""
    if isinstance(request, pb.GetTaskRequest):
        return [("id", "task", request.id)]
    if isinstance(request, pb.SendMessageRequest):
        message = request.message
        return [("task_id", "task", message.task_id),
                ("context_id", "context", message.context_id)]
    return []
