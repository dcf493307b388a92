"""A backend stream cut mid-task (issue 30 item 5), against the official SDK agents: a
TCP relay between the gateway and the agent resets the connection (a real RST) while a
`stream: N@MS` task is streaming. The gateway subscribes to the task again upstream and
the client's stream (SSE in any dialect, or gRPC) goes on: every chunk once, in order,
to the task's end, as an uncut stream of the same task would be. An agent that stays
away ends the client's stream cleanly, with ids its client resumes from once the agent
is back.

The chunks come 300 ms apart and the cut follows a chunk at once, so the re-attach
(milliseconds on loopback) is done before the next: an event the agent emitted while no
stream was open would reach the client only inside a snapshot marked as a gap.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from tests.interop.grpc_resume_support import (
    V03,
    V10,
    Client,
    assert_resumed,
    ended_with_its_last_id,
    read_acting,
    shapes,
    whole_stream,
)
from tests.interop.resume_support import (
    BY_NAME,
    Dialect,
    Seen,
    artifacts,
    chunks,
    new_id,
    read,
    stream_through,
)
from tests.support.helpers import free_port, gateway_cmd, running, wait_for_port, write_config
from tests.support.interop_support import Deployment
from tests.support.sse_client import SseStream
from tests.support.tcp_relay import TcpRelay, tcp_relay

N = 10
PACED = f"stream: {N}@300"
TENANT = {"1.0": "a10", "0.3": "a03"}
# Client dialect x agent: both JSON-RPC versions on the agent of the other version too.
CASES = [("j10", "1.0"), ("j03", "0.3"), ("j10", "0.3"), ("r03", "1.0"), ("r10", "1.0")]


@contextmanager
def relayed_gateway(path: Path, relays: dict[str, TcpRelay],
                    grpc_port: int | None = None) -> Iterator[tuple[str, str]]:
    """A gateway of the test's own, journal on (gRPC too on ``grpc_port``), whose tenants
    a10 and a03 reach the SDK agents through ``relays``; yields its root URL and the URL
    of tenant ``{tenant}``."""
    port = free_port()
    tenants = {TENANT[v]: {"backend": {"url": f"http://127.0.0.1:{relay.port}/",
                                       "version": v, "binding": "JSONRPC"}}
               for v, relay in relays.items()}
    grpc_listen = {"grpc": f"127.0.0.1:{grpc_port}"} if grpc_port is not None else {}
    config = write_config(path, {
        "listen": {"http": f"127.0.0.1:{port}", **grpc_listen}, "tenants": tenants,
        "state": {"path": str(path.with_suffix(".state.db")),
                  "journal": {"enabled": True, "reattach_backoff": 0.05}}})
    with running(gateway_cmd(config), port, log=path.with_suffix(".log")):
        if grpc_port is not None:  # opened after the HTTP port
            wait_for_port(grpc_port)
        root = f"http://127.0.0.1:{port}"
        yield root, root + "/{tenant}"


async def reattaches(http: aiohttp.ClientSession, root: str) -> dict[str, int]:
    """The gateway's a2a_gateway_stream_reattaches_total, by outcome."""
    async with http.get(root + "/metrics") as resp:
        text = await resp.text()
    return {m.group(1): int(float(m.group(2))) for m in re.finditer(
        r'^a2a_gateway_stream_reattaches_total\{outcome="(\w+)"\} (\S+)$', text, re.M)}


def wire(seen: Seen) -> list[tuple[str | None, Any]]:
    return [(event.id, step.shape) for event, step in seen]


def assert_ids(seen: Seen) -> None:
    ids = [event.id for event, _ in seen]
    assert all(ids) and len(set(ids)) == len(ids), wire(seen)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{c}-{v}" for c, v in CASES])
async def test_a_backend_stream_cut_mid_task_goes_on_for_the_client(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path, name: str,
        version: str) -> None:
    dialect: Dialect = BY_NAME[name]
    # The shape of an uncut stream of such a task, straight through the session's gateway.
    whole = await stream_through(http, deployment.url(TENANT[version]), dialect,
                                 f"stream: {N}")
    async with tcp_relay(deployment.agents[version].jsonrpc) as relay:
        with relayed_gateway(tmp_path / "cut.yaml", {version: relay}) as (root, url):
            base = url.format(tenant=TENANT[version])
            verb, target, body = dialect.send(base, PACED, new_id(), new_id())
            async with SseStream(http, verb, target, body=body,
                                 headers=dialect.headers()) as stream:
                seen = await read(stream, dialect, until=artifacts(3))
                assert await relay.reset() >= 1  # the backend stream, by RST
                await read(stream, dialect, seen=seen)
            counts = await reattaches(http, root)
    assert chunks(seen) == [f"chunk {i}" for i in range(N)], wire(seen)
    assert [step.shape for _, step in seen] == [step.shape for _, step in whole], (
        wire(seen), wire(whole))
    assert all(step.gap() is None for _, step in seen), wire(seen)
    assert_ids(seen)
    assert {step.task_id for _, step in seen} == {seen[0][1].task_id}
    assert counts.get("reattached", 0) >= 1 and not counts.get("gave_up"), counts


GRPC_CASES = [(V10, "1.0"), (V03, "0.3")]


@pytest.mark.parametrize(("client", "version"), GRPC_CASES,
                         ids=[f"grpc{c.version.replace('.', '')}-{v}" for c, v in GRPC_CASES])
async def test_a_grpc_clients_stream_goes_on_when_the_backend_stream_is_cut(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path,
        client: Client, version: str) -> None:
    tenant = TENANT[version]
    async with grpc.aio.insecure_channel(deployment.grpc_target()) as channel:
        whole = await whole_stream(channel, client, tenant, N)  # the session's gateway
    grpc_port = free_port()
    async with tcp_relay(deployment.agents[version].jsonrpc) as relay:
        with relayed_gateway(tmp_path / "cut.yaml", {version: relay}, grpc_port) as (root, _):
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                call = client.send(channel, tenant, PACED, new_id(), new_id())

                async def cut() -> None:  # the backend stream, by RST
                    assert await relay.reset() >= 1

                seen = await read_acting(call, 3, cut)
                await ended_with_its_last_id(call, seen)
            counts = await reattaches(http, root)
    assert all(g.step.gap() is None for g in seen), shapes(seen)
    assert_resumed(whole, seen, n=N)  # one part: the stream as if never cut
    assert counts.get("reattached", 0) >= 1 and not counts.get("gave_up"), counts


async def test_an_agent_that_stays_away_ends_the_stream_cleanly_and_it_resumes(
        deployment: Deployment, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    dialect = BY_NAME["j10"]
    async with tcp_relay(deployment.agents["1.0"].jsonrpc) as relay:
        with relayed_gateway(tmp_path / "away.yaml", {"1.0": relay}) as (root, url):
            base = url.format(tenant="a10")
            verb, target, body = dialect.send(base, PACED, new_id(), new_id())
            async with SseStream(http, verb, target, body=body,
                                 headers=dialect.headers()) as stream:
                first = await read(stream, dialect, until=artifacts(3))
                await relay.away()  # reset, and refused from now on
                await read(stream, dialect, seen=first)  # ends: no error, no hang
            counts = await reattaches(http, root)
            await relay.listen()  # the agent is back
            task_id, last_id = first[0][1].task_id, first[-1][0].id
            verb, target, body = dialect.subscribe(base, task_id)
            async with SseStream(http, verb, target, body=body,
                                 headers=dialect.headers(last_id)) as again:
                rest = await read(again, dialect)
    assert [step.kind for _, step in first if step.kind == "error"] == [], wire(first)
    assert first[-1][1].state in (None, "working"), wire(first)  # not the task's end
    assert_ids(first)
    assert counts.get("gave_up") == 1 and not counts.get("reattached"), counts
    assert_ids(rest)
    assert rest[-1][1].shape == ("status", "completed", None), wire(rest)
    # What the agent sent while it was away reaches the client inside the snapshot the
    # resume starts with (marked as a gap), the rest as events: every chunk, once each.
    got = [text for text in chunks(first + rest)]
    snapshot = [part.get("text") for _, step in rest if step.gap() is not None
                for artifact in step.raw.get("artifacts", []) for part in artifact["parts"]]
    assert got == sorted(set(got), key=lambda t: int(t.split()[1])), (wire(first), wire(rest))
    assert set(got) | set(snapshot) == {f"chunk {i}" for i in range(N)}, wire(rest)
