"""Streams that survive their client's connection (issue 30), against the official SDK
agents: a raw client drops a `stream: N` task's stream and comes back with the id of the
last event it got (`Last-Event-ID`), by subscribing or by retrying its send, through the
same gateway, another replica, or the same gateway restarted. It must get the rest of the
task once, in order, as if it had never left.
"""

from __future__ import annotations

import re
import signal
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.interop.resume_support import (
    BY_NAME,
    DIALECTS,
    Dialect,
    Seen,
    Step,
    artifacts,
    assert_invalid_params,
    assert_sent_once,
    chunk_number,
    chunks,
    gateway_config,
    new_id,
    own_gateway,
    read,
    rpc10,
    stream_through,
)
from tests.support.helpers import free_port, gateway_cmd, redis_server, running
from tests.support.interop_support import Deployment
from tests.support.sse_client import SseStream

J10 = BY_NAME["j10"]
CASES = [(d, t) for t in ("a10", "a03") for d in DIALECTS]


async def drop_after(http: aiohttp.ClientSession, dialect: Dialect, call: tuple[str, str, Any],
                     n: int, last_id: str | None = None) -> Seen:
    """A stream read up to its ``n``-th artifact update; then the connection is closed."""
    verb, url, body = call
    async with SseStream(http, verb, url, body=body,
                         headers=dialect.headers(last_id)) as stream:
        return await read(stream, dialect, until=artifacts(n))


async def resume(http: aiohttp.ClientSession, dialect: Dialect, call: tuple[str, str, Any],
                 last_id: str | None) -> Seen:
    verb, url, body = call
    async with SseStream(http, verb, url, body=body,
                         headers=dialect.headers(last_id)) as stream:
        return await read(stream, dialect)


def wire(seen: Seen) -> list[tuple[str | None, int | None, Any]]:
    """What a failure message shows of a stream: each event's id, retry and step."""
    return [(event.id, event.retry, step.shape) for event, step in seen]


def assert_journaled(seen: Seen) -> None:
    """Every event has an id of its own; the stream's first also says `retry: 1000`."""
    assert seen and all(event.id for event, _ in seen), wire(seen)
    assert seen[0][0].retry == 1000, wire(seen)


def assert_resumed(whole: Seen, *parts: Seen, n: int = 20) -> None:
    """The parts of a dropped and resumed stream are, together, the uninterrupted one."""
    assert_journaled(whole)
    union = [item for part in parts for item in part]
    for part in parts:
        assert_journaled(part)
    ids = [event.id for event, _ in union]
    assert len(set(ids)) == len(ids), f"an id came twice: {[wire(p) for p in parts]}"
    assert chunks(union) == [f"chunk {i}" for i in range(n)], [wire(p) for p in parts]
    states = [step.state for _, step in union if step.state is not None]
    assert states[-1] == "completed", [wire(p) for p in parts]
    assert [step.shape for _, step in union] == [step.shape for _, step in whole], (
        wire(whole), [wire(p) for p in parts])
    assert {step.task_id for _, step in union} == {union[0][1].task_id}


@pytest.mark.parametrize(("dialect", "tenant"), CASES,
                         ids=[f"{d.name}-{t}" for d, t in CASES])
async def test_a_dropped_stream_resumes_by_subscribing_with_the_last_id(
        deployment: Deployment, http: aiohttp.ClientSession, dialect: Dialect,
        tenant: str) -> None:
    base = deployment.url(tenant)
    whole = await stream_through(http, base, dialect, "stream: 20")
    first = await drop_after(http, dialect, dialect.send(base, "stream: 20", new_id(),
                                                         new_id()), 6)
    task_id, last_id = first[0][1].task_id, first[-1][0].id
    rest = await resume(http, dialect, dialect.subscribe(base, task_id), last_id)
    assert_resumed(whole, first, rest)


async def test_a_retried_send_with_the_last_id_resumes_without_sending_again(
        deployment: Deployment, http: aiohttp.ClientSession) -> None:
    base = deployment.url("a10")
    whole = await stream_through(http, base, J10, "stream: 20")
    context_id = new_id()
    send = J10.send(base, "stream: 20", context_id, new_id())
    first = await drop_after(http, J10, send, 6)
    task_id, last_id = first[0][1].task_id, first[-1][0].id
    rest = await resume(http, J10, send, last_id)  # the very same request, and the id
    assert_resumed(whole, first, rest)
    await assert_sent_once(http, base, context_id, task_id, "stream: 20")


@pytest.fixture
async def live_task(deployment: Deployment, http: aiohttp.ClientSession) -> Any:
    """A task of the v1.0 agent (tenant a10) that stays `working` until cancelled."""
    base = deployment.url("a10")
    sent = await rpc10(http, base, "SendMessage", {
        "message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "slow"}]},
        "configuration": {"returnImmediately": True}})
    task_id = sent["task"]["id"]
    yield task_id
    await rpc10(http, base, "CancelTask", {"id": task_id})


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.name for d in DIALECTS])
async def test_a_last_event_id_the_gateway_did_not_make_is_invalid_params(
        deployment: Deployment, http: aiohttp.ClientSession, dialect: Dialect,
        live_task: str) -> None:
    base = deployment.url("a10")
    other = await stream_through(http, base, J10, "stream: 2")
    other_id = other[-1][0].id  # a real id, of another task
    assert other_id and other[0][1].task_id != live_task
    for bad in ("not-an-id-of-ours", other_id):
        verb, url, body = dialect.subscribe(base, live_task)
        async with SseStream(http, verb, url, body=body, headers=dialect.headers(bad)) as sub:
            await assert_invalid_params(dialect, sub)


async def test_a_retried_send_with_a_foreign_id_is_invalid_params_and_sends_nothing(
        deployment: Deployment, http: aiohttp.ClientSession) -> None:
    base = deployment.url("a10")
    context_id = new_id()
    verb, url, body = J10.send(base, "stream: 2", context_id, new_id())
    async with SseStream(http, verb, url, body=body,
                         headers=J10.headers("not-an-id-of-ours")) as stream:
        await assert_invalid_params(J10, stream)
    listed = await rpc10(http, base, "ListTasks", {"contextId": context_id})
    assert listed["tasks"] == [], listed


def snapshot_chunks(step: Step) -> list[str]:
    """The chunk texts a Task snapshot's `stream` artifact holds."""
    return [part.get("text", "") for artifact in step.raw.get("artifacts", [])
            if artifact.get("artifactId") == "stream" for part in artifact.get("parts", [])]


def assert_gap_snapshot(step: Step, seen: Seen) -> None:
    gap = step.gap()
    assert step.kind == "task" and isinstance(gap, dict) and gap.get("reason"), wire(seen)


async def test_an_id_the_journal_no_longer_holds_gets_the_task_marked_as_a_gap(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    agent = deployment.agents["1.0"].jsonrpc
    with own_gateway(tmp_path / "gap.yaml", agent, {"journal": {"max_events": 3}}) as base:
        # A finished task: the journal holds its last 3 events only.
        whole = await stream_through(http, base, J10, "stream: 10")
        assert_journaled(whole)
        task_id, first_id = whole[0][1].task_id, whole[0][0].id
        verb, url, body = J10.subscribe(base, task_id)
        async with SseStream(http, verb, url, body=body, headers=J10.headers(first_id)) as sub:
            if sub.is_sse:
                ended = await read(sub, J10)
                assert_gap_snapshot(ended[0][1], ended)
                assert ended[0][1].state == "completed", wire(ended)
                assert snapshot_chunks(ended[0][1]) == [f"chunk {i}" for i in range(10)]
            else:  # v1.0 refuses to subscribe to a task that has ended: say so clearly
                error = sub.answer.body["error"]
                assert error["code"] == -32004 and "terminal" in error["message"], sub.answer
                print(f"\nGAP-ON-FINISHED-TASK: refused: {sub.answer}")
        # A running task whose client comes back too late for the journal: the task as it
        # is now, marked, then its live events; together, every chunk.
        send = J10.send(base, "stream: 40", new_id(), new_id())
        first = await drop_after(http, J10, send, 10)
        rest = await resume(http, J10, J10.subscribe(base, first[0][1].task_id),
                            first[0][0].id)
    assert_gap_snapshot(rest[0][1], rest)
    later = [chunk_number(c) for c in chunks(rest[1:])]
    assert later == sorted(set(later)), wire(rest)
    covered = {chunk_number(c) for c in snapshot_chunks(rest[0][1])} | set(later)
    assert covered == set(range(40)), wire(rest)
    assert rest[-1][1].shape == ("status", "completed", None), wire(rest)


async def test_a_stream_dropped_on_one_replica_resumes_on_another(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    agent = deployment.agents["1.0"].jsonrpc
    with redis_server() as redis_url, ExitStack() as stack:
        state = {"backend": "redis", "url": redis_url, "key_prefix": f"rs-{new_id()}:"}
        a = stack.enter_context(own_gateway(tmp_path / "a.yaml", agent, state))
        b = stack.enter_context(own_gateway(tmp_path / "b.yaml", agent, state))
        whole = await stream_through(http, a, J10, "stream: 20")
        first = await drop_after(http, J10, J10.send(a, "stream: 20", new_id(), new_id()), 6)
        rest = await resume(http, J10, J10.subscribe(b, first[0][1].task_id), first[-1][0].id)
    assert_resumed(whole, first, rest)


async def replayed_events(http: aiohttp.ClientSession, root: str) -> int | None:
    """The gateway's count of journaled events served again (None: no such metric)."""
    async with http.get(root + "/metrics") as resp:
        text = await resp.text()
    match = re.search(r"^a2a_gateway_stream_replayed_events_total (\S+)$", text, re.M)
    return int(float(match.group(1))) if match else None


async def test_a_stream_resumes_on_the_same_gateway_restarted(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path,
        record_property: Any) -> None:
    n = 100  # ~5 s of chunks: the task is still running when the gateway is back
    port = free_port()
    config = gateway_config(tmp_path / "restart.yaml", port, deployment.agents["1.0"].jsonrpc,
                            {})
    base, root = f"http://127.0.0.1:{port}/t", f"http://127.0.0.1:{port}"
    with running(gateway_cmd(config), port, log=tmp_path / "restart-1.log") as gateway:
        verb, url, body = J10.send(base, f"stream: {n}", new_id(), new_id())
        async with SseStream(http, verb, url, body=body, headers=J10.headers()) as stream:
            first = await read(stream, J10, until=artifacts(6))
            gateway.send_signal(signal.SIGTERM)  # open streams end at once
            await read(stream, J10, seen=first, cut=True)
        assert gateway.wait(30) == 0
    # A new session: the old one may pool a connection to the stopped process.
    with running(gateway_cmd(config), port, log=tmp_path / "restart-2.log"):
        async with aiohttp.ClientSession() as again:
            rest = await resume(again, J10, J10.subscribe(base, first[0][1].task_id),
                                first[-1][0].id)
            replayed = await replayed_events(again, root)
    got = [chunk_number(c) for c in chunks(first + rest)]
    gaps = [step for _, step in rest if step.gap() is not None]
    covered = {chunk_number(c) for step in gaps for c in snapshot_chunks(step)}
    missing = sorted(set(range(n)) - set(got))
    replayed_chunks = None if replayed is None else sum(
        step.kind == "artifact" for _, step in rest[:replayed])
    counts = {"before_drop": len(chunks(first)), "replayed_events": replayed,
              "replayed_chunks": replayed_chunks, "missing_as_events": missing,
              "gap_snapshots": len(gaps), "after_resume": len(chunks(rest))}
    record_property("restart_counts", counts)
    print(f"\nRESTART-COUNTS: {counts}")
    shown = (counts, wire(first)[-2:], wire(rest)[:4])  # where the stream was cut and went on
    assert_journaled(first)
    assert all(event.id for event, _ in rest), shown
    assert rest[-1][1].shape == ("status", "completed", None), shown
    assert got == sorted(set(got)), shown
    # What no gateway saw may be missing as events, but a snapshot marked as a gap has it.
    assert set(missing) <= covered, shown
