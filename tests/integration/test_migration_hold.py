"""A candidate's stream read on into the journal after its client left (docs/streams.md,
"Resuming a stream"): the candidate's error that ends it reaches no client, but the
migration counts it against the candidate (its rollback sees it); the hold running out
is no one's failure. One process: a v1.0 JSON-RPC candidate the test paces."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from prometheus_client import REGISTRY

from gateway.config.models import parse_config
from gateway.migration.stats import ArmCounts
from gateway.server.app import Server
from tests.support.helpers import free_port, serving
from tests.support.sse_agent import JsonRpcStream, posting_app
from tests.support.waiting import wait_until

V10 = {"A2A-Version": "1.0"}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
    "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}


class _Candidate:
    """Streams a working status and one chunk, waits for :attr:`go` (its client gone),
    then another chunk (which finds the client gone: the gateway holds the stream), waits
    for :attr:`held`, then (``fails``) a JSON-RPC error, or nothing more until
    :attr:`release`."""

    def __init__(self, fails: bool) -> None:
        self.fails = fails
        self.go = asyncio.Event()
        self.held = asyncio.Event()
        self.release = asyncio.Event()  # the test is done: the stream ends

    def app(self) -> web.Application:
        return posting_app(self.rpc)

    async def rpc(self, request: web.Request) -> web.StreamResponse:
        stream = await JsonRpcStream.opened(request)
        ids = {"taskId": "t1", "contextId": "c1"}
        await stream.result({"statusUpdate": {**ids, "status": {"state": "TASK_STATE_WORKING"}}})
        for n in range(2):
            await stream.result({"artifactUpdate": {**ids, "artifact": {
                "artifactId": "a", "parts": [{"text": f"chunk {n}"}]}}})
            if n == 0:
                await self.go.wait()  # the client is gone: the next chunk finds it so
        await self.held.wait()
        if self.fails:
            await stream.error(-32603, "the successor broke")
        else:
            await self.release.wait()  # the gateway's hold runs out first
        return await stream.end()


@contextlib.asynccontextmanager
async def _gateway(candidate: _Candidate, hold: float) -> AsyncIterator[tuple[str, Server]]:
    async with serving(candidate.app()) as base:
        port = free_port()
        server = Server(parse_config({
            "listen": {"http": f"127.0.0.1:{port}"},
            "state": {"path": ":memory:", "journal": {"enabled": True, "hold": hold}},
            "tenants": {"q": {
                "backend": {"url": "http://127.0.0.1:9/", "version": "1.0",
                            "precheck": False},
                "migration": {"candidate": {"url": base + "/", "version": "1.0",
                                            "precheck": False},
                              "mode": "canary", "canary": {"share": 1.0}}}}}))
        await server.start()
        try:
            yield f"http://127.0.0.1:{port}/q/", server
        finally:
            await server.stop()


def _holds() -> float:
    return REGISTRY.get_sample_value("a2a_gateway_stream_holds_total") or 0.0


def _candidates(server: Server) -> ArmCounts:
    return server.holder.current.migration.active["q"].stats.arms["candidate"]


async def _held_after_the_client_left(http: aiohttp.ClientSession, url: str,
                                      candidate: _Candidate) -> None:
    holds = _holds()
    async with http.post(url, json=SEND, headers=V10) as resp:
        head = b""
        while head.count(b"\n\n") < 2:  # the status and the chunk
            head += await resp.content.readany()
    assert b"chunk 0" in head
    candidate.go.set()  # the client is gone; the candidate goes on
    await wait_until(lambda: _holds() == holds + 1, "the gateway held the stream")
    candidate.held.set()


async def test_the_candidates_error_on_a_held_stream_counts_against_it() -> None:
    candidate = _Candidate(fails=True)
    async with _gateway(candidate, hold=60) as (url, server), \
            aiohttp.ClientSession() as http:
        await _held_after_the_client_left(http, url, candidate)  # the candidate fails
        await wait_until(lambda: _candidates(server).calls == 1,
                         "the held stream ended and was counted")
        assert (_candidates(server).calls, _candidates(server).errors) == (1, 1)


async def test_a_hold_that_runs_out_is_not_the_candidates_failure() -> None:
    candidate = _Candidate(fails=False)
    async with _gateway(candidate, hold=0.2) as (url, server), \
            aiohttp.ClientSession() as http:
        await _held_after_the_client_left(http, url, candidate)
        await wait_until(lambda: _candidates(server).calls == 1,
                         "the held stream ended and was counted")
        assert (_candidates(server).errors, _candidates(server).timeouts) == (0, 0)
        candidate.release.set()
