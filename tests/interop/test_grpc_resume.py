"""Resumable streams for gRPC clients (issue 30; docs/streams.md, "Resuming a stream"),
against the official SDK agents: a raw client of either gRPC package (the SDK's own
stubs; the SDK clients cannot send our `last-event-id` metadata) cancels a `stream: N`
task's call mid-stream and comes back with the id the last event it got carried in its
metadata (`a2a-gateway/event-id`), by subscribing or by retrying its send. It must get the
rest of the task once, in order, as if it had never left; the stream's end names its last
id in trailing metadata (`last-event-id`).
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path

import aiohttp
import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from tests.interop.grpc_resume_support import (
    V03,
    V10,
    Client,
    Got,
    artifacts,
    assert_resumed,
    chunks,
    ended_with_its_last_id,
    read,
    read_acting,
    shapes,
    whole_stream,
)
from tests.interop.resume_support import (
    BOUND,
    assert_sent_once,
    chunk_number,
    gateway_config,
    new_id,
    own_gateway,
    rpc10,
)
from tests.support.helpers import free_port, gateway_cmd, redis_server, running, wait_for_port
from tests.support.interop_support import Deployment
from tests.support.waiting import wait_until


async def moved_on(http: aiohttp.ClientSession, base: str, task_id: str, n: int) -> None:
    """Waits until the agent has sent ``n`` chunks of the task (its GetTask says so): what
    it sent while no client was there reaches the one that comes back through the journal
    only (the gateway read the stream on for it), not through a re-attach."""
    async def parts() -> bool:
        task = await rpc10(http, base, "GetTask", {"id": task_id})
        return sum(len(a.get("parts", [])) for a in task.get("artifacts", [])) >= n
    await wait_until(parts, f"{n} chunks of task {task_id} sent", timeout=BOUND)


@pytest.fixture
async def channel(deployment: Deployment) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(deployment.grpc_target()) as opened:
        yield opened


CASES = [(V10, "a10"), (V10, "g03"), (V03, "g10"), (V03, "a03")]


@pytest.mark.parametrize(("client", "tenant"), CASES,
                         ids=[f"grpc{c.version.replace('.', '')}-{t}" for c, t in CASES])
async def test_a_cancelled_grpc_stream_resumes_by_subscribing_with_the_last_id(
        deployment: Deployment, http: aiohttp.ClientSession, channel: grpc.aio.Channel,
        client: Client, tenant: str) -> None:
    whole = await whole_stream(channel, client, tenant, 20)
    first = await read(client.send(channel, tenant, "stream: 20", new_id(), new_id()),
                       until=artifacts(6))
    task_id, last_id = first[0].step.task_id, first[-1].event_id
    await moved_on(http, deployment.url(tenant), task_id, 12)
    call = client.subscribe(channel, tenant, task_id, last_id)
    rest = await read(call)
    await ended_with_its_last_id(call, rest)
    assert_resumed(whole, first, rest)


@pytest.mark.parametrize("client", [V10, V03], ids=["grpc10", "grpc03"])
async def test_a_retried_grpc_send_with_the_last_id_resumes_without_sending_again(
        deployment: Deployment, http: aiohttp.ClientSession, channel: grpc.aio.Channel,
        client: Client) -> None:
    tenant = "a10"
    whole = await whole_stream(channel, client, tenant, 20)
    context_id, message_id = new_id(), new_id()
    first = await read(client.send(channel, tenant, "stream: 20", context_id, message_id),
                       until=artifacts(6))
    task_id = first[0].step.task_id
    base = deployment.url(tenant)
    await moved_on(http, base, task_id, 12)
    # The very same request, and the id.
    call = client.send(channel, tenant, "stream: 20", context_id, message_id,
                       first[-1].event_id)
    rest = await read(call)
    await ended_with_its_last_id(call, rest)
    assert_resumed(whole, first, rest)
    await assert_sent_once(http, base, context_id, task_id, "stream: 20")


def assert_invalid_argument(client: Client, err: grpc.aio.AioRpcError) -> None:
    """InvalidParams as the client's package says it: INVALID_ARGUMENT with, for v1.0,
    an ErrorInfo of reason INVALID_PARAMS, for v0.3 the `InvalidParamsError: ` message."""
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert "Last-Event-ID" in err.details(), err
    if client.version == "0.3":
        assert err.details().startswith("InvalidParamsError: "), err
        return
    raw = dict(err.trailing_metadata())["grpc-status-details-bin"]
    info = error_details_pb2.ErrorInfo()
    assert status_pb2.Status.FromString(raw).details[0].Unpack(info), err
    assert info.reason == "INVALID_PARAMS", info


@pytest.fixture
async def live_task(deployment: Deployment, http: aiohttp.ClientSession,
                    ) -> AsyncIterator[str]:
    """A task of the v1.0 agent (tenant a10) that stays `working` until cancelled."""
    base = deployment.url("a10")
    sent = await rpc10(http, base, "SendMessage", {
        "message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "slow"}]},
        "configuration": {"returnImmediately": True}})
    task_id: str = sent["task"]["id"]
    yield task_id
    await rpc10(http, base, "CancelTask", {"id": task_id})


@pytest.mark.parametrize("client", [V10, V03], ids=["grpc10", "grpc03"])
async def test_a_grpc_last_event_id_the_gateway_did_not_make_is_invalid_argument(
        deployment: Deployment, http: aiohttp.ClientSession, channel: grpc.aio.Channel,
        client: Client, live_task: str) -> None:
    other = await whole_stream(channel, V10, "a10", 2)
    other_id = other[-1].event_id  # a real id, of another task
    assert other_id and other[0].step.task_id != live_task
    for bad in ("not-an-id-of-ours", other_id):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await read(client.subscribe(channel, "a10", live_task, bad))
        assert_invalid_argument(client, refused.value)
    # A retried send with a foreign id is refused before anything is sent.
    context_id = new_id()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await read(client.send(channel, "a10", "stream: 2", context_id, new_id(),
                               "not-an-id-of-ours"))
    assert_invalid_argument(client, refused.value)
    listed = await rpc10(http, deployment.url("a10"), "ListTasks", {"contextId": context_id})
    assert listed["tasks"] == [], listed


def assert_snapshot_then_live(seen: list[Got], n: int) -> None:
    """A Task first, then live events: the chunks of its artifacts and the later ones are
    all ``n``, the later ones in order and once each, and the task completed."""
    assert seen[0].step.kind == "task", shapes(seen)
    snapshot = [part.get("text") for artifact in seen[0].step.raw.get("artifacts", [])
                for part in artifact.get("parts", [])]
    later = [chunk_number(text) for text in chunks(seen[1:])]
    assert later == sorted(set(later)), shapes(seen)
    assert {chunk_number(text) for text in snapshot} | set(later) == set(range(n)), (
        shapes(seen))
    assert seen[-1].step.shape == ("status", "completed", None), shapes(seen)


async def test_a_grpc_subscribe_without_an_id_is_the_snapshot_then_live(
        channel: grpc.aio.Channel) -> None:
    """Without `last-event-id`, SubscribeToTask re-attaches as before: the task as it is
    now, then its live events (with ids: a client can resume from them)."""
    first = await read(V10.send(channel, "a10", "stream: 20", new_id(), new_id()),
                       until=artifacts(3))
    call = V10.subscribe(channel, "a10", first[0].step.task_id, None)
    rest = await read(call)
    await ended_with_its_last_id(call, rest)
    assert rest[0].step.gap() is None, shapes(rest)
    assert_snapshot_then_live(rest, 20)


@pytest.mark.parametrize("client", [V10, V03], ids=["grpc10", "grpc03"])
async def test_a_grpc_id_the_journal_no_longer_holds_gets_the_task_marked_as_a_gap(
        deployment: Deployment, tmp_path: Path, client: Client) -> None:
    """A client that comes back too late for the journal (it holds a task's last 3 events
    here) gets the task as it is now, marked, then its live events; together, every
    chunk."""
    grpc_port = free_port()
    with own_gateway(tmp_path / "gap.yaml", deployment.agents["1.0"].jsonrpc,
                     {"journal": {"max_events": 3}}, grpc_port):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as near:
            first = await read(client.send(near, "t", "stream: 40", new_id(), new_id()),
                               until=artifacts(10))
            call = client.subscribe(near, "t", first[0].step.task_id, first[0].event_id)
            rest = await read(call)
            await ended_with_its_last_id(call, rest)
    gap = rest[0].step.gap()
    assert isinstance(gap, dict) and gap.get("reason"), shapes(rest)
    assert_snapshot_then_live(rest, 40)


@pytest.mark.parametrize("client", [V10, V03], ids=["grpc10", "grpc03"])
async def test_a_cancelled_grpc_stream_resumes_on_another_replica(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path,
        client: Client) -> None:
    """Two gateways sharing a real redis-server: what replica A read on into the journal
    after its client left, replica B serves to the client that comes back there."""
    agent = deployment.agents["1.0"].jsonrpc
    ports = free_port(), free_port()
    with redis_server() as redis_url, ExitStack() as stack:
        state = {"backend": "redis", "url": redis_url, "key_prefix": f"rs-{new_id()}:"}
        a_base = stack.enter_context(own_gateway(tmp_path / "a.yaml", agent, state, ports[0]))
        stack.enter_context(own_gateway(tmp_path / "b.yaml", agent, state, ports[1]))
        async with (grpc.aio.insecure_channel(f"127.0.0.1:{ports[0]}") as a,
                    grpc.aio.insecure_channel(f"127.0.0.1:{ports[1]}") as b):
            whole = await whole_stream(a, client, "t", 20)
            first = await read(client.send(a, "t", "stream: 20", new_id(), new_id()),
                               until=artifacts(6))
            task_id = first[0].step.task_id
            await moved_on(http, a_base, task_id, 12)
            call = client.subscribe(b, "t", task_id, first[-1].event_id)
            rest = await read(call)
            await ended_with_its_last_id(call, rest)
    assert_resumed(whole, first, rest)


async def test_a_grpc_stream_resumes_on_the_same_gateway_restarted(
        deployment: Deployment, tmp_path: Path) -> None:
    """SIGTERM mid-stream (SQLite): the client's stream ends OK with its last id in the
    trailers, the gateway reads the task on into the journal before it exits (the drain's
    hold), and the gateway started again serves the rest from there: every chunk once."""
    n = 40  # ~2 s of chunks: the task goes on past the SIGTERM and ends within the grace
    port, grpc_port = free_port(), free_port()
    config = gateway_config(tmp_path / "restart.yaml", port, deployment.agents["1.0"].jsonrpc,
                            {}, grpc_port)
    target = f"127.0.0.1:{grpc_port}"
    with running(gateway_cmd(config), port, log=tmp_path / "restart-1.log") as gateway:
        wait_for_port(grpc_port)
        async with grpc.aio.insecure_channel(target) as channel:
            whole = await whole_stream(channel, V10, "t", n)
            call = V10.send(channel, "t", f"stream: {n}", new_id(), new_id())

            async def stop() -> None:  # the stream then ends at an event boundary
                gateway.send_signal(signal.SIGTERM)

            first = await read_acting(call, 6, stop)
            await ended_with_its_last_id(call, first)
        assert gateway.wait(BOUND) == 0
    assert len(chunks(first)) < n, shapes(first)  # it ended before the task did
    with running(gateway_cmd(config), port, log=tmp_path / "restart-2.log"):
        wait_for_port(grpc_port)
        async with grpc.aio.insecure_channel(target) as channel:
            call = V10.subscribe(channel, "t", first[0].step.task_id, first[-1].event_id)
            rest = await read(call)
            await ended_with_its_last_id(call, rest)
    assert all(g.step.gap() is None for g in rest), shapes(rest)
    assert_resumed(whole, first, rest, n=n)
