"""A rolling restart behind one address (issue 30 item 4): two gateway replicas sharing a
real redis-server (the journal on) behind a real nginx, 100 streams of the official v1.0
SDK agent's `stream: N` skill open through it in the four SSE client dialects. One
replica gets SIGTERM, comes back, then the other: each stream a drain ends, its client
resumes with `Last-Event-ID` through the same address (landing on the replica still
serving) until its task is terminal. Every client must end with the task a direct client
gets, every chunk as an event, none twice, no gap.

Why nginx: it is what stands in front of replicas in production, and a stopped replica
refusing the connection sends the reconnect to the other one (tests/support/
nginx_process.py). The gateway binds a port of its own alone only with workers
(SO_REUSEPORT), and two gateway processes on one port would need new config surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.interop.resume_support import (
    BY_NAME,
    DIALECTS,
    Dialect,
    Seen,
    chunks,
    gateway_config,
    new_id,
    read,
    stream_through,
)
from tests.interop.test_stream_resume import replayed_events, snapshot_chunks
from tests.support.helpers import free_port, gateway_cmd, redis_server, running
from tests.support.interop_support import Deployment
from tests.support.nginx_process import nginx_balancer
from tests.support.sse_client import SseStream
from tests.support.waiting import wait_until

STREAMS = 100
CHUNKS = 100  # 50 ms apart, longer under load: the tasks outlive both replicas' turns
GRACE = 5.0  # each replica's shutdown_grace: how long it reads on what its drain ended
ATTEMPTS = 20  # calls one client may make (its send, its resumes, refused retries)
TERMINAL = {"completed", "failed", "canceled", "rejected"}


@dataclass
class Client:
    """One stream's client: what it got, and why it called again."""

    dialect: Dialect
    seen: Seen = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)  # the phase of each clean end mid-task
    refused: int = 0  # calls answered "shutting down, retry" (none expected)
    resumed_at: int = 0  # len(seen) when it last resumed
    done: bool = False

    def step_states(self) -> list[str]:
        return [step.state for _, step in self.seen if step.state is not None]

    @property
    def terminal(self) -> bool:
        states = self.step_states()
        return bool(states) and states[-1] in TERMINAL


def final_task(seen: Seen) -> tuple[str | None, list[str]]:
    """The task as a client builds it from its events: the last state, and the `stream`
    artifact's chunks (a Task sets them, an update appends or replaces)."""
    state: str | None = None
    parts: list[str] = []
    for _, step in seen:
        if step.kind == "task":
            parts = snapshot_chunks(step)
        elif step.kind == "artifact":
            parts = [*parts, step.text or ""] if step.raw.get("append") else [step.text or ""]
        if step.state is not None:
            state = step.state
    return state, parts


def _shutting_down(answer: Any) -> bool:
    return "shutting down" in json.dumps(answer)


async def follow(http: aiohttp.ClientSession, base: str, client: Client,
                 phase: list[str]) -> None:
    """Stream the task, and resume it from the last id after each clean end until it is
    terminal. A call a draining replica refused ("shutting down; retry") is retried."""
    dialect = client.dialect
    call = dialect.send(base, f"stream: {CHUNKS}", new_id(), new_id())
    last_id: str | None = None
    for _ in range(ATTEMPTS):
        verb, url, body = call
        async with SseStream(http, verb, url, body=body,
                             headers=dialect.headers(last_id)) as stream:
            if not stream.is_sse:
                assert last_id is not None and _shutting_down(stream.answer.body), stream.answer
                client.refused += 1
                continue
            before = len(client.seen)
            await read(stream, dialect, seen=client.seen)
        errors = [step for _, step in client.seen[before:] if step.kind == "error"]
        if errors:
            assert last_id is not None and len(client.seen) == before + 1 and \
                _shutting_down(errors[0].raw), errors
            del client.seen[before:]
            client.refused += 1
            continue
        if client.terminal:
            client.done = True
            return
        assert client.seen, "the stream ended before its first event"
        client.cuts.append(phase[0])
        last_id = client.seen[-1][0].id
        client.resumed_at = len(client.seen)
        call = dialect.subscribe(base, client.seen[0][1].task_id)
    raise AssertionError(f"{dialect.name}: not terminal after {ATTEMPTS} calls: "
                         f"{[s.shape for _, s in client.seen][-5:]}")


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def stop(proc: subprocess.Popen[bytes]) -> asyncio.Future[int]:
    """SIGTERM: the replica drains; its exit code, once it has exited."""
    proc.send_signal(signal.SIGTERM)
    return asyncio.ensure_future(asyncio.to_thread(proc.wait, GRACE + 30))


def check(client: Client, expected: tuple[str | None, list[str]]) -> list[str]:
    """What is wrong with one client's stream (nothing: [])."""
    wrong = []
    ids = [event.id for event, _ in client.seen]
    if None in ids or len(set(ids)) != len(ids):
        wrong.append("an event without an id, or an id twice")
    if final_task(client.seen) != expected:
        wrong.append(f"final task {final_task(client.seen)}")
    if chunks(client.seen) != expected[1]:
        wrong.append(f"chunks as events {chunks(client.seen)}")
    if any(step.gap() is not None for _, step in client.seen):
        wrong.append("a gap snapshot")
    return wrong


async def test_a_rolling_restart_of_two_replicas_loses_no_event(
        deployment: Deployment, tmp_path: Path) -> None:
    agent = deployment.agents["1.0"].jsonrpc
    ports = [free_port(), free_port()]
    with redis_server() as redis_url, ExitStack() as stack:
        state = {"backend": "redis", "url": redis_url, "key_prefix": f"rr-{new_id()}:"}
        configs = [gateway_config(tmp_path / f"{name}.yaml", port, agent, state,
                                  shutdown_grace=GRACE)
                   for name, port in zip("ab", ports, strict=True)]
        a = stack.enter_context(running(gateway_cmd(configs[0]), ports[0],
                                        log=tmp_path / "a-1.log"))
        b = stack.enter_context(running(gateway_cmd(configs[1]), ports[1],
                                        log=tmp_path / "b.log"))
        balancer = stack.enter_context(nginx_balancer(ports, tmp_path / "nginx.log"))
        base = f"http://127.0.0.1:{balancer}/t"
        clients = [Client(DIALECTS[i % len(DIALECTS)]) for i in range(STREAMS)]
        phase = ["before"]
        connector = aiohttp.TCPConnector(limit=0)  # every stream at once
        async with aiohttp.ClientSession(connector=connector) as http:
            direct = asyncio.ensure_future(stream_through(
                http, f"http://127.0.0.1:{agent}/", BY_NAME["j10"], f"stream: {CHUNKS}"))
            following = asyncio.gather(*(follow(http, base, c, phase) for c in clients))
            try:
                await wait_until(lambda: all(chunks(c.seen) for c in clients),
                                 "every stream's first chunk", timeout=60)
                phase[0] = "a"
                a_stopped = stop(a)
                # A new A as soon as the old one has closed its listener (it drains on):
                # started in a thread, the clients go on meanwhile.
                await wait_until(lambda: not listening(ports[0]), "A's listener closed")
                await asyncio.to_thread(stack.enter_context, running(
                    gateway_cmd(configs[0]), ports[0], log=tmp_path / "a-2.log"))
                # Every client A's drain ended has resumed (and got an event: its replay
                # is served).
                await wait_until(lambda: all(c.done or len(c.seen) > c.resumed_at
                                             for c in clients if c.cuts),
                                 "the clients of A resumed", timeout=30)
                replayed = [await replayed_events(http, f"http://127.0.0.1:{ports[1]}")]
                live_at_b = sum(not c.done for c in clients)
                phase[0] = "b"
                assert await stop(b) == 0
                assert await a_stopped == 0
                await asyncio.wait_for(following, 60)
                replayed.append(await replayed_events(http, f"http://127.0.0.1:{ports[0]}"))
                whole = await asyncio.wait_for(direct, 60)
            except BaseException:
                following.cancel()
                direct.cancel()
                raise
    expected = final_task(whole)
    assert expected == ("completed", [f"chunk {i}" for i in range(CHUNKS)]), expected
    wrong = {i: problems for i, c in enumerate(clients) if (problems := check(c, expected))}
    cuts = [cut for c in clients for cut in c.cuts]
    lost = sum(len(set(expected[1]) - set(chunks(c.seen))) for c in clients)
    counts = {
        "streams": STREAMS, "chunks_each": CHUNKS, "live_at_second_stop": live_at_b,
        "cut_by_a": cuts.count("a"), "cut_by_b": cuts.count("b"),
        "resumes": len(cuts), "refused_retries": sum(c.refused for c in clients),
        "events": sum(len(c.seen) for c in clients),
        "replayed_events": None if None in replayed else sum(r or 0 for r in replayed),
        "lost_events": lost, "duplicates": sum(len(chunks(c.seen)) - len(set(chunks(c.seen)))
                                               for c in clients),
        "gaps": sum(step.gap() is not None for c in clients for _, step in c.seen)}
    print(f"\nROLLING-RESTART-COUNTS: {json.dumps(counts)}")
    assert not wrong, {i: (clients[i].dialect.name, p) for i, p in list(wrong.items())[:3]}
    assert lost == 0 and cuts.count("before") == 0, counts
    # Both drains ended streams mid-task: the restart was rolled under load.
    assert cuts.count("a") > 0 and cuts.count("b") > 0, counts
    assert all(c.done for c in clients)
