"""A client that leaves a stream and comes back (docs/streams.md, "Resuming a stream"):
the gateway reads the backend on into the journal while the client is away, and the
client's `Last-Event-ID` gets it what it missed, once, in order, with the ids it would
have had. One process: a v1.0 JSON-RPC backend the test paces, the gateway, the client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import structlog.testing
from a2a.types import a2a_pb2 as pb
from aiohttp import web
from prometheus_client import REGISTRY

from gateway.config.models import parse_config
from gateway.server.app import Server
from gateway.state.journal import JournalEntry
from gateway.state.sqlite_store import SqliteStore
from tests.integration.grpc_support import V10_MD, p10_send, v10_stub
from tests.support.helpers import free_port, serving
from tests.support.sse_agent import JsonRpcStream, posting_app
from tests.support.waiting import wait_until
from translators.resume_marks import EVENT_ID_KEY, LAST_EVENT_ID

V10 = {"A2A-Version": "1.0"}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
    "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}


def _event(i: int) -> dict[str, Any]:
    return {"artifactUpdate": {"taskId": "t1", "contextId": "c1", "artifact": {
        "artifactId": "a", "parts": [{"text": f"chunk {i}"}]}}}


def _status(state: str) -> dict[str, Any]:
    return {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}}


class _Agent:
    """Streams a working status and chunks 0-2, waits for :attr:`go`, then chunks 3-5 and
    completed; a subscribe gets the completed Task. Counts the messages it got; ``cut``:
    a write after :attr:`go` found the gateway gone."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.sent_all = asyncio.Event()
        self.cut = asyncio.Event()
        self.messages = 0

    def app(self) -> web.Application:
        return posting_app(self.rpc)

    async def rpc(self, request: web.Request) -> web.StreamResponse:
        stream = await JsonRpcStream.opened(request)
        send = stream.result
        if stream.method == "SendStreamingMessage":
            self.messages += 1
            await send(_status("TASK_STATE_WORKING"))
            for i in range(3):
                await send(_event(i))
            await self.go.wait()
            try:
                for i in range(3, 6):
                    await send(_event(i))
                await send(_status("TASK_STATE_COMPLETED"))
            except ConnectionError:
                self.cut.set()
                raise
            self.sent_all.set()
        else:  # SubscribeToTask
            await send({"task": {"id": "t1", "contextId": "c1",
                                 "status": {"state": "TASK_STATE_COMPLETED"}}})
        return await stream.end()


@contextlib.asynccontextmanager
async def _gateway(agent: _Agent, grace: float = 10.0, state: str = ":memory:",
                   grpc_port: int | None = None) -> AsyncIterator[tuple[str, Server]]:
    """The gateway in front of ``agent`` (its SQLite store at ``state``; gRPC too on
    ``grpc_port``), stopped at the end unless the test stopped it."""
    async with serving(agent.app()) as base:
        port = free_port()
        listen = {"http": f"127.0.0.1:{port}"}
        if grpc_port is not None:
            listen["grpc"] = f"127.0.0.1:{grpc_port}"
        server = Server(parse_config({
            "listen": listen, "shutdown_grace": grace,
            "state": {"path": state, "journal": {"enabled": True}},
            "tenants": {"q": {"backend": {"url": base + "/", "version": "1.0",
                                          "precheck": False}}}}))
        await server.start()
        try:
            yield f"http://127.0.0.1:{port}/", server
        finally:
            if server.store is not None:
                await server.stop()


def _events(text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(id, JSON-RPC result) of each SSE event; the `retry:` field is checked apart."""
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            out.append((fields.get("id"), json.loads(fields["data"])["result"]))
    return out


def _chunk(result: dict[str, Any]) -> str:
    if "artifactUpdate" in result:
        return str(result["artifactUpdate"]["artifact"]["parts"][0]["text"])
    return str(result["statusUpdate"]["status"]["state"])


async def test_a_client_that_left_gets_what_the_agent_sent_meanwhile() -> None:
    agent = _Agent()
    async with _gateway(agent) as (url, server), aiohttp.ClientSession() as http:
        async with http.post(url, json=SEND, headers=V10) as resp:
            head = b""
            while head.count(b"\n\n") < 4:  # the status and three chunks
                head += await resp.content.readany()
        # The client is gone; the agent goes on.
        assert b"retry: 1000\n" in head.split(b"\n\n")[0]
        got = _events(head.decode())
        assert [_chunk(r) for _, r in got] == ["TASK_STATE_WORKING", "chunk 0", "chunk 1",
                                               "chunk 2"]
        agent.go.set()
        await asyncio.wait_for(agent.sent_all.wait(), 10)
        last_id = got[-1][0]
        assert last_id is not None
        resume = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask",
                  "params": {"id": "t1"}}

        # The held stream journals the rest as the agent sends it: resume once it has.
        store = server.store
        assert store is not None

        async def journaled_all() -> bool:
            return (await store.journal_read("q", "t1", 0, 100)).terminal

        await wait_until(journaled_all, "the held stream journaled the task's end")
        async with http.post(url, json=resume,
                             headers={**V10, "Last-Event-ID": last_id}) as again:
            text = await again.text()
    rest = _events(text)
    assert [_chunk(r) for _, r in rest] == ["chunk 3", "chunk 4", "chunk 5",
                                            "TASK_STATE_COMPLETED"]
    ids = [i for i, _ in got + rest]
    assert len(set(ids)) == len(ids) == 8  # every event an id, none twice
    assert agent.messages == 1  # nothing was sent to the agent again


async def test_an_id_the_gateway_did_not_make_is_invalid_params() -> None:
    agent = _Agent()
    async with _gateway(agent) as (url, _), aiohttp.ClientSession() as http:
        resume = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": "t1"}}
        async with http.post(url, json=resume,
                             headers={**V10, "Last-Event-ID": "not-ours"}) as resp:
            body = await resp.json()
    assert body["error"]["code"] == -32602
    assert "Last-Event-ID" in body["error"]["message"]



def _journaled(entries: list[JournalEntry]) -> list[str]:
    """The journal's events as _chunk names them."""
    out = []
    for entry in entries:
        event = pb.StreamResponse.FromString(entry.data)
        if event.HasField("artifact_update"):
            out.append(event.artifact_update.artifact.parts[0].text)
        else:
            out.append(pb.TaskState.Name(event.status_update.status.state))
    return out


async def _stopped_after_three_chunks(http: aiohttp.ClientSession, url: str,
                                      server: Server) -> tuple[list[Any], asyncio.Future[None]]:
    """A stream read up to chunk 2, then the gateway's drain (Server.stop, as at SIGTERM)
    begins; the stream read to its end. Its events, and the stop under way."""
    async with http.post(url, json=SEND, headers=V10) as resp:
        head = b""
        while head.count(b"\n\n") < 4:  # the status and three chunks
            head += await resp.content.readany()
        stopping = asyncio.ensure_future(server.stop())
        rest = await asyncio.wait_for(resp.content.read(), 10)  # an end, not a reset
    return _events((head + rest).decode()), stopping


async def test_at_shutdown_a_stream_ends_for_its_client_and_is_read_on_into_the_journal(
        tmp_path: Path) -> None:
    """The drain while the task goes on: the client gets a clean end after the events it
    had, each with its id; the backend's stream is read on into the journal until the
    task ends, and stop() waits for it (docs/streams.md, "At shutdown"): a client that
    resumes from its last id on another replica misses nothing."""
    agent = _Agent()
    state = str(tmp_path / "state.db")
    async with _gateway(agent, 30, state) as (url, server), aiohttp.ClientSession() as http:
        got, stopping = await _stopped_after_three_chunks(http, url, server)
        assert [_chunk(r) for _, r in got] == ["TASK_STATE_WORKING", "chunk 0", "chunk 1",
                                               "chunk 2"]
        assert all(event_id for event_id, _ in got)
        assert not stopping.done()  # the held stream keeps stop() waiting
        agent.go.set()
        await asyncio.wait_for(stopping, 10)  # the task has ended: well before the grace
    await _journaled_whole(state)
    assert agent.messages == 1 and not agent.cut.is_set()


async def _journaled_whole(state: str) -> None:
    """The journal in the SQLite store at ``state`` holds the whole task, ended."""
    store = SqliteStore(state)
    try:
        journal = await store.journal_read("q", "t1", 0, 100)
    finally:
        await store.close()
    assert journal.terminal
    assert _journaled(journal.entries) == ["TASK_STATE_WORKING", "chunk 0", "chunk 1", "chunk 2",
                                   "chunk 3", "chunk 4", "chunk 5", "TASK_STATE_COMPLETED"]


def _grpc_chunk(event: pb.StreamResponse) -> tuple[str, str]:
    """(the event's id in its metadata, its chunk name) of a gRPC client's event."""
    update = event.artifact_update if event.HasField("artifact_update") else event.status_update
    name = (event.artifact_update.artifact.parts[0].text if event.HasField("artifact_update")
            else pb.TaskState.Name(event.status_update.status.state))
    return str(update.metadata[EVENT_ID_KEY]), name


async def test_at_shutdown_a_grpc_stream_ends_ok_with_its_last_id_and_is_read_on(
        tmp_path: Path) -> None:
    """The drain for a gRPC client, as for SSE: status OK after the events it had, the
    last one's id in the trailers (`last-event-id`); the backend's stream is read on into
    the journal until the task ends, and stop() waits for it."""
    agent = _Agent()
    state = str(tmp_path / "state.db")
    port = free_port()
    async with (_gateway(agent, 30, state, grpc_port=port) as (_, server),
                grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel):
        call = v10_stub(channel).SendStreamingMessage(p10_send("x"), metadata=V10_MD)
        got = [_grpc_chunk(await call.read()) for _ in range(4)]  # the status, 3 chunks
        stopping = asyncio.ensure_future(server.stop())
        # An end, not a reset; nothing after chunk 2: the agent waits for `go`.
        assert await asyncio.wait_for(call.read(), 10) is grpc.aio.EOF
        assert await call.code() == grpc.StatusCode.OK
        trailers = dict(await call.trailing_metadata())
        assert [name for _, name in got] == ["TASK_STATE_WORKING", "chunk 0", "chunk 1",
                                             "chunk 2"]
        assert trailers[LAST_EVENT_ID] == got[-1][0] and all(i for i, _ in got)
        assert not stopping.done()  # the held stream keeps stop() waiting
        agent.go.set()
        await asyncio.wait_for(stopping, 10)  # the task has ended: well before the grace
    await _journaled_whole(state)
    assert agent.messages == 1 and not agent.cut.is_set()


def _holds() -> float:
    return REGISTRY.get_sample_value("a2a_gateway_stream_holds_total") or 0.0


async def test_at_shutdown_the_deadline_ends_a_held_stream() -> None:
    """A task that goes on past the drain's deadline: the stream is held (counted), and
    stop() returns at the deadline, its backend stream closed (one deadline for the whole
    shutdown)."""
    agent = _Agent()
    holds = _holds()
    async with _gateway(agent, grace=0.5) as (url, server), aiohttp.ClientSession() as http:
        got, stopping = await _stopped_after_three_chunks(http, url, server)
        assert len(got) == 4 and all(event_id for event_id, _ in got)
        await asyncio.wait_for(stopping, 10)
        assert _holds() == holds + 1
        agent.go.set()
        await asyncio.wait_for(agent.cut.wait(), 10)
    assert not agent.sent_all.is_set()


async def test_a_client_that_left_has_one_access_line_written_as_it_leaves() -> None:
    """The held stream's driver stays in its handler, which ends only once the agent's
    stream does: the call's access line (499, CLIENT_CANCELLED) is written when the
    client leaves, and not again when the handler ends."""
    agent = _Agent()
    with structlog.testing.capture_logs() as logs:
        async with _gateway(agent) as (url, server), aiohttp.ClientSession() as http:
            async with http.post(url, json=SEND, headers=V10) as resp:
                head = b""
                while head.count(b"\n\n") < 4:
                    head += await resp.content.readany()

            def calls() -> list[dict[str, Any]]:
                return [e for e in logs if e.get("event") == "call"]

            await wait_until(lambda: len(calls()) == 1, "the access line of the call left")
            assert not agent.go.is_set()  # written as the client left, not at the end
            agent.go.set()
            await asyncio.wait_for(agent.sent_all.wait(), 10)
            await wait_until(lambda: len(server.holder.streams) == 0,
                             "the held stream ended with the agent's")
    line, = calls()
    assert (line["status"], line["outcome"], line["operation"]) == (
        499, "CLIENT_CANCELLED", "SendStreamingMessage")
