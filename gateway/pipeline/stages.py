"""The stages every call passes, in one ordered list shared by unary calls and streams
(after mitmproxy's ordered addons and Envoy's filter chains).

A stage has up to four hooks, each optional:

- ``enter(call, passage)``, before the backend, in list order: it may refuse the call
  (raise A2AError), pick what the call goes to, or rewrite the request. It returns None
  when it is done, or an awaitable when it must wait (a store read, a card fetch): most
  calls wait for nothing, and a coroutine per stage per call would cost more than the
  stage's own work;
- ``hold(call, passage)``, around the backend: a context held while the backend answers
  (a unary call) or streams (until the stream driver is done), or None;
- ``leave(call, passage, answer)``, after a unary answer, in list order: it may record or
  rewrite the answer; what must be waited for before the answer goes out it leaves in
  ``passage.wait``. A stream's events pass the stream filters instead
  (gateway/streams/plan.py);
- ``failed(call, passage, error)``, when a unary call's backend exchange ends in an
  error instead (the error goes on to the client as it was): what a stage counts of
  every call, answered or not, it counts in ``leave`` and here, with no hold around the
  backend for it.

Counting, logging and tracing the call's end are not a stage: they are the call's one
exit, ``observe.finish``, which the ingress (unary) and the stream driver call once.

The list is built once per config (``build``), with only the stages that config needs, so
a call asks no stage whether it applies; the hooks of each kind are kept apart, so a call
runs no empty hook.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TypeAlias

from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.routing.tenants import TenantRoute
from translators.dialects.base import WireAnswer

if TYPE_CHECKING:
    from gateway.egress.base import Backend

Answer: TypeAlias = "ProtoMessage | WireAnswer | None"


@dataclass(slots=True)
class Passage:
    """What the stages decide for one call on its way: the tenant's route, the backend it
    goes to, whether it is passed through as the client sent it, and an answer the
    gateway gives itself instead of the backend (ListTasks from the task index)."""

    route: TenantRoute
    streaming: bool
    backend: Backend | None = None  # the router stage picks it
    forward: bool = False
    local: Callable[[Call], Awaitable[Answer]] | None = None
    wait: Awaitable[None] | None = None  # a leave's work the answer waits for
    # The migration's record of the call (gateway/migration/stage.py): its arm, what its
    # shadow copy compares. None for a tenant without a migration.
    migration: object | None = None

    def also_wait(self, work: Awaitable[None] | None) -> None:
        """Have the answer wait for ``work`` too, beside what it waits for already."""
        if work is None:
            return
        self.wait = work if self.wait is None else _both(self.wait, work)

    @property
    def to(self) -> Backend:
        assert self.backend is not None, "the router stage picks the backend first"
        return self.backend


async def _both(first: Awaitable[None], second: Awaitable[None]) -> None:
    """Both at once: each is a store write (the task index's row, the migration's owner
    bindings), so the answer waits for the slower one instead of one after the other.
    Both run to their end whatever the other does; the first failure is raised."""
    done = await asyncio.gather(first, second, return_exceptions=True)
    for outcome in done:
        if isinstance(outcome, BaseException):
            raise outcome


Enter = Callable[[Call, Passage], Awaitable[None] | None]
Hold = Callable[[Call, Passage], AbstractAsyncContextManager[None] | None]
Leave = Callable[[Call, Passage, Answer], Answer]
Failed = Callable[[Call, Passage, Exception], None]


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    enter: Enter | None = None
    hold: Hold | None = None
    leave: Leave | None = None
    failed: Failed | None = None


@dataclass(frozen=True)
class Stages:
    """The ordered stages of one config, and each kind of hook in that order."""

    stages: tuple[Stage, ...]
    enters: tuple[Enter, ...] = field(init=False)
    holds: tuple[Hold, ...] = field(init=False)
    leaves: tuple[Leave, ...] = field(init=False)
    fails: tuple[Failed, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "enters", tuple(s.enter for s in self.stages if s.enter))
        object.__setattr__(self, "holds", tuple(s.hold for s in self.stages if s.hold))
        object.__setattr__(self, "leaves", tuple(s.leave for s in self.stages if s.leave))
        object.__setattr__(self, "fails", tuple(s.failed for s in self.stages if s.failed))

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    async def enter(self, call: Call, passage: Passage) -> None:
        """Each stage's ``enter`` in order, until one has the gateway answer the call
        itself (``passage.local``): the stages after it are for calls to the backend."""
        for enter in self.enters:
            waiting = enter(call, passage)
            if waiting is not None:
                await waiting
            if passage.local is not None:
                return

    async def leave(self, call: Call, passage: Passage, answer: Answer) -> Answer:
        for leave in self.leaves:
            answer = leave(call, passage, answer)
        if passage.wait is not None:
            await passage.wait
        return answer

    def failed(self, call: Call, passage: Passage, error: Exception) -> None:
        for failed in self.fails:
            failed(call, passage, error)

    def held(self, call: Call, passage: Passage) -> AbstractAsyncContextManager[None]:
        """The holds of the call, as one context: nothing, the one hold itself (the usual
        case: the backend's call slot), or all of them in order."""
        holds = []
        for hold in self.holds:
            held = hold(call, passage)
            if held is not None:
                holds.append(held)
        if not holds:
            return _NOTHING
        return holds[0] if len(holds) == 1 else Held(holds)


class Held:
    """The stages' holds, entered in order and left in reverse, as nested ``async with``
    blocks would be (without a generator or an exit stack per call). A hold that fails
    to enter leaves those entered before it."""

    __slots__ = ("_entered", "_holds")

    def __init__(self, holds: Sequence[AbstractAsyncContextManager[None]]) -> None:
        self._holds = holds
        self._entered = 0

    async def __aenter__(self) -> None:
        try:
            for hold in self._holds:
                await hold.__aenter__()
                self._entered += 1
        except BaseException as exc:
            await self._leave(type(exc), exc, exc.__traceback__)
            raise

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._leave(kind, exc, tb)

    async def _leave(self, kind: type[BaseException] | None, exc: BaseException | None,
                     tb: TracebackType | None) -> None:
        failed: BaseException | None = None
        while self._entered:
            self._entered -= 1
            try:
                await self._holds[self._entered].__aexit__(kind, exc, tb)
            except BaseException as err:  # the outer holds see it, as nested blocks would
                failed, kind, exc, tb = err, type(err), err, err.__traceback__
        if failed is not None:
            raise failed


_NOTHING: AbstractAsyncContextManager[None] = nullcontext()


def build(stages: Sequence[Stage | None]) -> Stages:
    """The stages a config needs, in order (None: a stage this config does without)."""
    return Stages(tuple(s for s in stages if s is not None))
