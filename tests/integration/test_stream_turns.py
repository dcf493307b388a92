"""A stream whose events arrive many to a read takes turns with the rest of the worker
(gateway/streams/turns.py): the event loop is never held for the whole read. The gateway, its
backend and a ticker share one loop here; the turns run on a clock that counts the events
served, and the ticker how many were served in one pass of the loop (not milliseconds: a
loaded machine measured 15.6 ms against a 15 ms bound)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from gateway.config.models import parse_config
from gateway.server.app import Server
from gateway.streams import turns
from gateway.streams.turns import Openings
from tests.support.helpers import free_port, serving

EVENTS = 3000
SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": {
    "kind": "message", "messageId": "m", "role": "user",
    "parts": [{"kind": "text", "text": "x"}]}}}


def _frame(event: dict[str, object]) -> str:
    return f"data: {json.dumps({'jsonrpc': '2.0', 'id': 'ID', 'result': event})}\n\n"


def _stream_backend(burst: str) -> web.Application:
    """A v1.0 JSON-RPC backend that answers every call with ``burst`` (SSE frames made
    before the test, their id the call's) in one write: it shares the loop with the
    gateway, and must not hold it itself."""
    async def rpc(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(burst.replace('"ID"', json.dumps(body["id"])).encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/", rpc)
    return app


def _burst_backend() -> web.Application:
    """EVENTS working statuses and a completed one."""
    def status(state: str) -> str:
        return _frame({"statusUpdate": {"taskId": "t1", "contextId": "c1",
                                        "status": {"state": state}}})

    return _stream_backend("".join(status("TASK_STATE_WORKING") for _ in range(EVENTS))
                           + status("TASK_STATE_COMPLETED"))


class _CountingClock:
    """A clock for the turns that moves ``step`` per reading. A turn then lasts TURN / step
    readings (about one per event served) however loaded the machine is, and the readings
    count the events served."""

    def __init__(self, step: float) -> None:
        self.readings = 0
        self._step = step

    def __call__(self) -> float:
        self.readings += 1
        return self.readings * self._step


async def test_a_burst_of_events_does_not_hold_the_loop(http: aiohttp.ClientSession) -> None:
    clock = _CountingClock(turns.TURN / 10)  # a turn: 10 readings
    held: list[int] = []  # the turns' clock readings in each pass of the loop
    done = asyncio.Event()

    async def ticker() -> None:
        """Runs once per pass of the loop: what the stream served since its last run was
        served while the loop was held."""
        last = clock.readings
        while not done.is_set():
            await asyncio.sleep(0)
            held.append(clock.readings - last)
            last = clock.readings

    async with _own_gateway(_burst_backend()) as (url, openings):
        openings.clock = clock
        ticking = asyncio.create_task(ticker())
        async with http.post(url, json=SEND) as resp:
            text = await resp.text()
        done.set()
        await ticking
    # Every status, translated for the v0.3 client, the last one final.
    frames = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert len(frames) == EVENTS + 1
    assert frames[-1]["result"]["status"]["state"] == "completed"
    assert frames[-1]["result"]["final"] is True
    assert clock.readings > EVENTS  # the stream's turns ran on this clock
    # Held for a whole read, the loop would serve hundreds of events in one pass (274 to
    # 1834 readings with turns that never end); taking turns, a turn's worth: its 10
    # readings and the 2 or 3 of its start and end (13 measured).
    assert max(held) <= 20, sorted(held)[-5:]


@contextlib.asynccontextmanager
async def _own_gateway(backend: web.Application) -> AsyncIterator[tuple[str, Openings]]:
    """A gateway of its own in front of ``backend``: its URL and its worker's openings."""
    async with serving(backend) as base:
        port = free_port()
        server = Server(parse_config({
            "listen": {"http": f"127.0.0.1:{port}"}, "state": {"path": ":memory:"},
            "tenants": {"q": {"backend": {"url": base + "/", "version": "1.0",
                                          "precheck": False}}}}))
        await server.start()
        try:
            openings = server.connections.openings
            assert openings is not None
            yield f"http://127.0.0.1:{port}/", openings
        finally:
            await server.stop()


async def test_a_stream_stops_going_first_at_its_first_event(
        http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call goes before the open streams from its first byte to its answer's first
    byte: a stream's opening ends when its first event is written, not when it ends
    (else every stream would slow all the others for its whole life)."""
    monkeypatch.setattr(turns, "PRIORITY", 60.0)  # only the answer ends it here
    async with _own_gateway(_burst_backend()) as (url, openings), \
            http.post(url, json=SEND) as resp:
        first = await resp.content.readuntil(b"\n\n")
        assert b'"state":"working"' in first.replace(b" ", b"")
        assert openings.pending == 0  # answered, though the stream goes on
        rest = await resp.text()
    assert rest.count("data: ") == EVENTS


async def test_events_framed_in_short_turns_all_arrive_in_order(
        http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a call starts, the open streams take short turns and keep their frames for
    a turn's worth (one write, not one per short turn): none is lost or reordered."""
    monkeypatch.setattr(turns, "PRIORITY", 60.0)
    async with _own_gateway(_numbered_backend()) as (url, openings):
        starting = openings.begin()  # a call that stays starting: short turns throughout
        async with http.post(url, json=SEND) as resp:
            text = await resp.text()
        openings.end(starting)
    frames = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    texts = [f["result"]["artifact"]["parts"][0]["text"] for f in frames[:-1]]
    assert texts == [f"chunk {n}" for n in range(EVENTS)]
    assert frames[-1]["result"]["status"]["state"] == "completed"


def _numbered_backend() -> web.Application:
    """EVENTS numbered artifact chunks and a completed status."""
    return _stream_backend("".join(_frame({"artifactUpdate": {
        "taskId": "t1", "contextId": "c1", "append": n > 0,
        "artifact": {"artifactId": "a1", "parts": [{"text": f"chunk {n}"}]}}})
        for n in range(EVENTS)) + _frame({"statusUpdate": {
            "taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}))
