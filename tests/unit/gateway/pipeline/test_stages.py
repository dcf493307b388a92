"""The stage list (gateway/pipeline/stages.py): hooks run in order, an answer the gateway
gives itself ends the entering, holds nest as `async with` blocks do, and a leave's
pending work is awaited once after all leaves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.pipeline.stages import Answer, Passage, Stage, build
from tests.support.waiting import wait_until
from translators import operations as ops


def _call() -> Call:
    return Call(ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id="t"),
                CallContext(ClientFacts("JSONRPC"), "1.0"))


def _passage() -> Passage:
    return Passage(cast(Any, object()), streaming=False)


async def test_enter_hooks_run_in_order_and_wait_only_when_asked() -> None:
    seen: list[str] = []

    def sync(call: Call, passage: Passage) -> None:
        seen.append("sync")

    async def later() -> None:
        seen.append("awaited")

    def waits(call: Call, passage: Passage) -> Awaitable[None]:
        seen.append("waits")
        return later()

    stages = build([Stage("a", sync), None, Stage("b", waits), Stage("c", sync)])
    assert stages.names == ["a", "b", "c"]
    await stages.enter(_call(), _passage())
    assert seen == ["sync", "waits", "awaited", "sync"]


async def test_an_answer_of_the_gateways_own_ends_the_entering() -> None:
    seen: list[str] = []

    async def local(call: Call) -> Answer:
        return None

    def answers(call: Call, passage: Passage) -> None:
        seen.append("answers")
        passage.local = local

    def after(call: Call, passage: Passage) -> None:
        seen.append("after")

    passage = _passage()
    await build([Stage("index", answers), Stage("relay", after)]).enter(_call(), passage)
    assert seen == ["answers"] and passage.local is local


def _recording(name: str, log: list[str], fail_on_enter: bool = False,
               ) -> AbstractAsyncContextManager[None]:
    @asynccontextmanager
    async def hold() -> AsyncIterator[None]:
        if fail_on_enter:
            raise RuntimeError(f"{name} refused")
        log.append(f"enter {name}")
        try:
            yield
        except BaseException as exc:
            log.append(f"{name} saw {type(exc).__name__}")
            raise
        finally:
            log.append(f"leave {name}")

    return hold()


async def test_holds_nest_like_async_with_blocks() -> None:
    log: list[str] = []
    stages = build([Stage("slot", hold=lambda c, p: _recording("slot", log)),
                    Stage("none", hold=lambda c, p: None),
                    Stage("span", hold=lambda c, p: _recording("span", log))])
    with pytest.raises(ValueError):
        async with stages.held(_call(), _passage()):
            log.append("backend")
            raise ValueError("the backend failed")
    assert log == ["enter slot", "enter span", "backend", "span saw ValueError",
                   "leave span", "slot saw ValueError", "leave slot"]


async def test_a_hold_that_fails_to_enter_leaves_those_before_it() -> None:
    log: list[str] = []
    stages = build([Stage("slot", hold=lambda c, p: _recording("slot", log)),
                    Stage("limit", hold=lambda c, p: _recording("limit", log, True))])
    with pytest.raises(RuntimeError, match="limit refused"):
        async with stages.held(_call(), _passage()):
            log.append("backend")  # never reached
    assert log == ["enter slot", "slot saw RuntimeError", "leave slot"]


async def test_one_hold_is_held_as_itself() -> None:
    log: list[str] = []
    hold = _recording("slot", log)
    stages = build([Stage("slot", hold=lambda c, p: hold)])
    assert stages.held(_call(), _passage()) is hold


async def test_leaves_run_in_order_then_their_pending_work_once() -> None:
    log: list[str] = []

    async def written() -> None:
        log.append("written")

    def record(call: Call, passage: Passage, answer: Answer) -> Answer:
        log.append("record")
        passage.wait = written()
        return answer

    def rewrite(call: Call, passage: Passage, answer: Answer) -> Answer:
        log.append("rewrite")
        return pb.Task(id="rewritten")

    out = await build([Stage("index", leave=record), Stage("card", leave=rewrite)]).leave(
        _call(), _passage(), pb.Task(id="t"))
    assert isinstance(out, pb.Task) and out.id == "rewritten"
    assert log == ["record", "rewrite", "written"]


async def test_two_leaves_pending_work_is_waited_for_at_once_and_both_end() -> None:
    # The task index's write and the migration's bindings: the answer waits for the
    # slower, not for one after the other; a failure of one leaves the other to finish.
    log: list[str] = []
    released = asyncio.Event()

    async def write(name: str, fails: bool = False) -> None:
        log.append(f"{name} started")
        await released.wait()
        log.append(f"{name} done")
        if fails:
            raise RuntimeError(f"{name} failed")

    def index(call: Call, passage: Passage, answer: Answer) -> Answer:
        passage.also_wait(write("index", fails=True))
        return answer

    def bindings(call: Call, passage: Passage, answer: Answer) -> Answer:
        passage.also_wait(write("bindings"))
        return answer

    leaving = asyncio.ensure_future(build([Stage("migration", leave=bindings),
                                           Stage("index", leave=index)]).leave(
        _call(), _passage(), pb.Task(id="t")))
    await wait_until(lambda: len(log) == 2)
    assert sorted(log) == ["bindings started", "index started"]  # neither waits for the other
    released.set()
    with pytest.raises(RuntimeError, match="index failed"):
        await leaving
    assert sorted(log[2:]) == ["bindings done", "index done"]


async def test_failed_hooks_see_the_backends_error_in_order() -> None:
    seen: list[str] = []

    def counted(name: str) -> Any:
        def failed(call: Call, passage: Passage, error: Exception) -> None:
            seen.append(f"{name}: {error}")
        return failed

    stages = build([Stage("a", failed=counted("a")), Stage("b"), Stage("c", failed=counted("c"))])
    stages.failed(_call(), _passage(), ValueError("down"))
    assert seen == ["a: down", "c: down"]
