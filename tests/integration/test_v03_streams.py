"""What the gateway adds to streams from v0.3 backends (found by the compatibility matrix).

A stub v0.3 JSON-RPC backend behaves like a2a-sdk 0.3.26: its `tasks/resubscribe` sends
nothing until the task next changes (here: silence until the client has the stream's
first event, then an artifact), and then closes without the terminal status (as 0.3.26's
gRPC TaskSubscription usually does). The gateway sends the Task first at once (v1.0
promises it) and, when the stream closes early, the task's terminal status read with
tasks/get. A backend that stays silent until the client holds the first event decides
"not held back" without timing it: held back, the stream would never go on (BOUND).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.support.helpers import MakeGateway, free_port, serving, v03

BOUND = 10.0  # seconds a stream may take in all here (the Task's fetch waits 0.25 s)


class QuietBackend:
    def __init__(self) -> None:
        self.stream_over = False
        self.url = ""
        self.release = asyncio.Event()  # the client has the first event

    def task(self) -> dict[str, Any]:
        state = "completed" if self.stream_over else "working"
        return {"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": state}}

    async def rpc(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body["method"] == "tasks/get":
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": self.task()})
        assert body["method"] == "tasks/resubscribe", body
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await self.release.wait()
        update = {"kind": "artifact-update", "taskId": "t1", "contextId": "c1",
                  "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}}
        self.stream_over = True
        frame = {"jsonrpc": "2.0", "id": body["id"], "result": update}
        await response.write(f"data: {json.dumps(frame)}\n\n".encode())
        await response.write_eof()
        return response


@pytest.fixture
async def quiet_backend() -> AsyncIterator[QuietBackend]:
    backend = QuietBackend()
    app = web.Application()
    app.router.add_post("/", backend.rpc)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    backend.url = f"http://127.0.0.1:{port}/"
    yield backend
    await runner.cleanup()


async def _events(http: aiohttp.ClientSession, url: str, body: dict[str, Any],
                  headers: dict[str, str], release: asyncio.Event | None = None) -> list[Any]:
    """The stream's events; ``release`` is set once the first is here (the backend
    waits for it before its next)."""
    out: list[Any] = []
    try:
        async with asyncio.timeout(BOUND), http.post(url, json=body, headers=headers) as resp:
            async for line in resp.content:
                if line.startswith(b"data:"):
                    out.append(json.loads(line[5:])["result"])
                    if release is not None:
                        release.set()
    except TimeoutError:
        raise AssertionError(f"the stream stalled after {out}: an event held back until "
                             "the backend's next one?") from None
    return out


async def test_v10_subscribe_gets_the_task_first_and_the_end(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        quiet_backend: QuietBackend) -> None:
    gw = await make_gateway({"q": v03(quiet_backend.url)})
    # Not held back until the backend's first event: the backend waits for it.
    events = await _events(http, gw + "/", {"jsonrpc": "2.0", "id": 1, "method":
                                            "SubscribeToTask", "params": {"id": "t1"}},
                           {"A2A-Version": "1.0"}, quiet_backend.release)
    first, *rest = events
    assert first["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert [next(iter(e)) for e in rest] == ["artifactUpdate", "statusUpdate"]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_v03_resubscribe_ends_with_a_final_status(
        http: aiohttp.ClientSession, make_gateway: MakeGateway,
        quiet_backend: QuietBackend) -> None:
    gw = await make_gateway({"q": v03(quiet_backend.url)})
    events = await _events(http, gw + "/", {"jsonrpc": "2.0", "id": 1, "method":
                                            "tasks/resubscribe", "params": {"id": "t1"}}, {},
                           quiet_backend.release)
    kinds = [e["kind"] for e in events]
    assert kinds == ["task", "artifact-update", "status-update"]
    last = events[-1]
    assert (last["status"]["state"], last["final"]) == ("completed", True)


async def test_subscribing_to_an_ended_task_is_unsupported_for_v10_clients(
        http: aiohttp.ClientSession, make_gateway: MakeGateway) -> None:
    # Defect 17: a v0.3 backend refuses to resubscribe to a task that has ended with
    # InvalidParams (as a2a-sdk 0.3.26 does); v1.0 says UnsupportedOperationError.
    async def rpc(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body["method"] == "tasks/get":
            task = {"kind": "task", "id": "t1", "contextId": "c1",
                    "status": {"state": "completed"}}
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": task})
        error = {"code": -32602, "message": "Task t1 is in terminal state: completed"}
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": error})

    app = web.Application()
    app.router.add_post("/", rpc)
    async with serving(app) as base:
        gw = await make_gateway({"q": v03(base + "/")})
        request = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                   "params": {"id": "t1"}}
        async with http.post(gw + "/", json=request, headers={"A2A-Version": "1.0"}) as resp:
            answer = await resp.json(content_type=None)
    assert answer["error"]["code"] == -32004, answer  # UnsupportedOperationError
    assert "terminal" in answer["error"]["message"]


def _v10_stream_backend(release: asyncio.Event | None,
                        then_state: str | None) -> web.Application:
    """A v1.0 JSON-RPC backend whose stream sends a working status, waits for ``release``
    (if any), then a status in ``then_state`` (None: it closes instead)."""
    async def rpc(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def status(state: str) -> None:
            event = {"statusUpdate": {"taskId": "t1", "contextId": "c1",
                                      "status": {"state": state}}}
            frame = {"jsonrpc": "2.0", "id": body["id"], "result": event}
            await response.write(f"data: {json.dumps(frame)}\n\n".encode())

        await status("TASK_STATE_WORKING")
        if release is not None:
            await release.wait()
        if then_state is not None:
            await status(then_state)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/", rpc)
    return app


async def test_v03_clients_get_each_status_at_once_and_a_final_one_at_the_end(
        http: aiohttp.ClientSession, make_gateway: MakeGateway) -> None:
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": {
        "kind": "message", "messageId": "m", "role": "user",
        "parts": [{"kind": "text", "text": "x"}]}}}
    backend = {"version": "1.0", "precheck": False}
    # A working status is not held back to learn whether it is the last one: the
    # backend sends the next only once the client has it.
    release = asyncio.Event()
    async with serving(_v10_stream_backend(release, "TASK_STATE_COMPLETED")) as base:
        gw = await make_gateway({"q": {"backend": {"url": base + "/", **backend}}})
        events = await _events(http, gw + "/", send, {}, release)
    first, last = events
    assert (first["status"]["state"], first["final"]) == ("working", False)
    assert (last["status"]["state"], last["final"]) == ("completed", True)
    # A stream that closes after a status that did not end it: that status again, final.
    async with serving(_v10_stream_backend(None, None)) as base:
        gw = await make_gateway({"q": {"backend": {"url": base + "/", **backend}}})
        events = await _events(http, gw + "/", send, {})
    assert [(e["status"]["state"], e["final"]) for e in events] == [
        ("working", False), ("working", True)]
