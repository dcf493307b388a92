"""gRPC clients of a journaled stream for the interop tests (issue 30; docs/streams.md,
"Resuming a stream"): a raw client of either gRPC package (the SDK's own stubs; the SDK
clients cannot send our `last-event-id` metadata), the events it read with the ids their
metadata carried, and what a resumed stream must be."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as v03_grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc
from google.protobuf.json_format import MessageToDict

from tests.interop.resume_support import BOUND, Step, new_id, step_of

EVENT_ID_KEY = "a2a-gateway/event-id"  # each journaled event's id, in its metadata
LAST_EVENT_ID = "last-event-id"  # the resume's request key; the end's trailing key


@dataclass(frozen=True)
class Got:
    """One event as the client read it: its step and the id its metadata carried."""

    step: Step
    event_id: str | None


@dataclass(frozen=True)
class Client:
    """One gRPC client dialect: the v1.0 package (`lf.a2a.v1`, tenant in the request) or
    the v0.3 one (`a2a.v1`, tenant in `x-a2a-tenant` metadata)."""

    version: str

    def metadata(self, tenant: str, last_id: str | None) -> tuple[tuple[str, str], ...]:
        md = [("a2a-version", "1.0")] if self.version == "1.0" else [("x-a2a-tenant", tenant)]
        if last_id is not None:
            md.append((LAST_EVENT_ID, last_id))
        return tuple(md)

    def send(self, channel: grpc.aio.Channel, tenant: str, text: str, context_id: str,
             message_id: str, last_id: str | None = None) -> Any:
        if self.version == "1.0":
            return pb_grpc.A2AServiceStub(channel).SendStreamingMessage(
                pb.SendMessageRequest(tenant=tenant, message=pb.Message(
                    message_id=message_id, context_id=context_id, role=pb.ROLE_USER,
                    parts=[pb.Part(text=text)])), metadata=self.metadata(tenant, last_id))
        return v03_grpc.A2AServiceStub(channel).SendStreamingMessage(
            v03pb.SendMessageRequest(request=v03pb.Message(
                message_id=message_id, context_id=context_id, role=v03pb.ROLE_USER,
                content=[v03pb.Part(text=text)])), metadata=self.metadata(tenant, last_id))

    def subscribe(self, channel: grpc.aio.Channel, tenant: str, task_id: str,
                  last_id: str | None) -> Any:
        if self.version == "1.0":
            return pb_grpc.A2AServiceStub(channel).SubscribeToTask(
                pb.SubscribeToTaskRequest(tenant=tenant, id=task_id),
                metadata=self.metadata(tenant, last_id))
        return v03_grpc.A2AServiceStub(channel).TaskSubscription(
            v03pb.TaskSubscriptionRequest(name=f"tasks/{task_id}"),
            metadata=self.metadata(tenant, last_id))


V10, V03 = Client("1.0"), Client("0.3")


def got_of(event: Any) -> Got:
    """A StreamResponse of either package as a Step, and the id its payload carries."""
    step = step_of(MessageToDict(event))
    return Got(step, (step.raw.get("metadata") or {}).get(EVENT_ID_KEY))


async def read(call: Any, until: Callable[[list[Got]], bool] | None = None) -> list[Got]:
    """The call's events until ``until(seen)`` holds (then the call is cancelled, as a
    client whose connection broke) or the stream ends; BOUND seconds at most."""
    seen: list[Got] = []
    try:
        async with asyncio.timeout(BOUND):
            async for event in call:
                seen.append(got_of(event))
                if until is not None and until(seen):
                    call.cancel()
                    break
    except TimeoutError:
        raise AssertionError(f"the stream stalled after {shapes(seen)}") from None
    return seen



async def read_acting(call: Any, after: int, act: Callable[[], Awaitable[Any]]) -> list[Got]:
    """The call's events to its end (BOUND seconds at most), doing ``act`` once its
    ``after``-th chunk is in: what happens to the gateway or its backend mid-stream."""
    seen: list[Got] = []
    try:
        async with asyncio.timeout(BOUND):
            while (event := await call.read()) is not grpc.aio.EOF:
                seen.append(got_of(event))
                if len(chunks(seen)) == after and seen[-1].step.kind == "artifact":
                    await act()
    except TimeoutError:
        raise AssertionError(f"the stream stalled after {shapes(seen)}") from None
    return seen

def artifacts(n: int) -> Callable[[list[Got]], bool]:
    return lambda seen: sum(g.step.kind == "artifact" for g in seen) >= n


def shapes(seen: list[Got]) -> list[tuple[str | None, Any]]:
    """What a failure message shows of a stream: each event's id and step."""
    return [(g.event_id, g.step.shape) for g in seen]


def steps(seen: list[Got]) -> list[Step]:
    return [g.step for g in seen]


def chunks(seen: list[Got]) -> list[str]:
    return [g.step.text or "" for g in seen if g.step.kind == "artifact"]


async def whole_stream(channel: grpc.aio.Channel, client: Client, tenant: str,
                       n: int) -> list[Got]:
    call = client.send(channel, tenant, f"stream: {n}", new_id(), new_id())
    seen = await read(call)
    assert await call.code() == grpc.StatusCode.OK, shapes(seen)
    return seen


async def ended_with_its_last_id(call: Any, seen: list[Got]) -> None:
    """The stream ended OK, and its trailers name the id of its last event."""
    assert await call.code() == grpc.StatusCode.OK, shapes(seen)
    trailers = dict(await call.trailing_metadata())
    assert trailers.get(LAST_EVENT_ID) == seen[-1].event_id, (trailers, shapes(seen))


def assert_resumed(whole: list[Got], *parts: list[Got], n: int = 20) -> None:
    """The parts of a cancelled and resumed stream are, together, the uninterrupted one:
    every event with an id of its own, every chunk once and in order."""
    union = [g for part in parts for g in part]
    shown = [shapes(p) for p in parts]
    assert all(g.event_id for g in whole), shapes(whole)
    assert all(g.event_id for g in union), shown
    ids = [g.event_id for g in union]
    assert len(set(ids)) == len(ids), f"an id came twice: {shown}"
    assert chunks(union) == [f"chunk {i}" for i in range(n)], shown
    assert [s.shape for s in steps(union)] == [s.shape for s in steps(whole)], (
        shapes(whole), shown)
    assert union[-1].step.shape == ("status", "completed", None), shown
    assert {s.task_id for s in steps(union)} == {union[0].step.task_id}, shown
