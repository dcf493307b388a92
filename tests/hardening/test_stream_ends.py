"""How a stream that its client leaves ends: counted as CLIENT_CANCELLED on every
binding, and freed at once, without garbage that only a full collection reclaims
(found by the 10,000-idle-streams bench: one collection after they closed took ~1 s)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from aiohttp import web
from prometheus_client import REGISTRY

from gateway.egress.base import EventBatches
from gateway.observability import metrics
from gateway.streams.events import Flagged, with_final_flags, without_final_flags
from tests.hardening.hardening_support import (
    HeldRelay,
    ScriptedBackend,
    endless_sse,
    j03_message,
    p10_message,
    post,
    rpc_body,
)
from tests.support.helpers import (
    MakeGateway,
    free_port,
    gateway_cmd,
    stop_process,
    v03,
    wait_for_port,
    write_config,
)
from tests.support.waiting import wait_until

STREAMS = 10


def _cancelled(binding: str) -> float:
    metrics.flush()  # the calls of the last moments are batched (gateway/observability/metrics.py)
    return REGISTRY.get_sample_value("a2a_gateway_calls_total", {
        "tenant": "b", "operation": "SendStreamingMessage", "client_version": "0.3" if binding != "GRPC"
        else "1.0", "client_binding": binding, "backend_version": "0.3",
        "backend_binding": "JSONRPC", "outcome": "CLIENT_CANCELLED"}) or 0.0


@contextmanager
def _handler_garbage() -> Iterator[list[str]]:
    """The names of the gateway's stream handler frames found unreachable (cyclic
    garbage) by a full collection at the end of the block."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[str] = []
    try:
        yield found
        gc.collect()
        for obj in gc.garbage:
            code = getattr(obj, "f_code", None) or getattr(obj, "cr_code", None)
            if code is not None and code.co_filename.endswith(
                    ("ingress/grpc.py", "ingress/sse_out.py")):
                found.append(code.co_qualname)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def test_a_client_that_leaves_is_counted_and_leaves_no_cycles(
        make_gateway: MakeGateway) -> None:
    grpc_port = free_port()
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/stream"] = endless_sse
        # No hold: the streams end with their clients (a held one is read on, by design).
        gw = await make_gateway({"b": v03(backend.url)}, grpc_port=grpc_port,
                                default_tenant="b",
                                state={"path": ":memory:", "journal": {"hold": 0}})
        before = {b: _cancelled(b) for b in ("JSONRPC", "GRPC")}
        with _handler_garbage() as garbage:
            for _ in range(STREAMS):
                resp = await http.post(gw + "/", json=rpc_body(
                    "message/stream", {"message": j03_message("s")}))
                await resp.content.readline()  # open: the first event is through
                resp.close()
            request = pb.SendMessageRequest(message=pb.Message(
                message_id="m", role=pb.ROLE_USER, parts=[pb.Part(text="s")]))
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                for _ in range(STREAMS):
                    call = channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")(
                        request.SerializeToString(), metadata=(("a2a-version", "1.0"),))
                    await call.read()
                    call.cancel()
            # The gateway sees both kinds of leaving.
            await wait_until(lambda: all(_cancelled(binding) - was >= STREAMS
                                         for binding, was in before.items()),
                             "every stream counted as cancelled by its client")
        for binding, was in before.items():
            assert _cancelled(binding) - was == STREAMS, binding
        assert garbage == [], f"stream handlers left in cycles: {sorted(set(garbage))}"


@pytest.mark.parametrize("wrap", [with_final_flags, without_final_flags])
async def test_a_stream_wrapper_closes_the_stream_it_wraps(
        wrap: Callable[[EventBatches], AsyncIterator[Flagged]]) -> None:
    """Closed between two reads (its client left, or shutdown cancelled a write), a
    wrapper closes its source at once: not the collector, later, nor the loop's end, all
    streams at once (`generator didn't stop after athrow()`)."""
    closed: list[str] = []

    async def source() -> AsyncIterator[list[pb.StreamResponse]]:
        try:
            while True:
                yield [pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(task_id="t"))]
        finally:
            closed.append("source")

    reads = wrap(source())
    assert [item.status_update.task_id for item, _ in await anext(reads)] == ["t"]
    await reads.aclose()  # type: ignore[attr-defined]
    assert closed == ["source"]


# ---------------------------------------------------------------- shutdown

SHUTDOWN_GRACE = 5.0
TICK = 0.01  # seconds between a ticking stream's events
BIG = 6 * 1024 * 1024  # characters of text in the event of a "big" stream: more than the
# gateway's socket takes while HeldRelay holds it (< 4.5 MiB), so the write of it waits


async def ticking_sse(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """A stream that sends a working status every TICK, for ever: at SIGTERM the
    gateway's stream tasks are anywhere in their loop (reading, framing, writing). For
    a message whose text begins with "silent", one that sends nothing, for ever; with
    "big", one status whose message holds BIG characters, then nothing."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    text = body["params"].get("message", {}).get("parts", [{}])[0].get("text", "")
    if text.startswith("silent"):
        await asyncio.sleep(3600)
    status: dict[str, Any] = {"state": "working"}
    if text.startswith("big"):
        status["message"] = {"kind": "message", "messageId": "w", "role": "agent",
                             "parts": [{"kind": "text", "text": text * (BIG // len(text))}]}
    event = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
        "kind": "status-update", "taskId": "t", "contextId": "c", "status": status,
        "final": False}})
    while True:
        await response.write(f"data: {event}\n\n".encode())
        await asyncio.sleep(3600 if text.startswith("big") else TICK)


async def _open_sse(http: aiohttp.ClientSession, url: str, body: object,
                    headers: dict[str, str] | None = None) -> aiohttp.ClientResponse:
    """A stream whose first event is through."""
    resp = await http.post(url, json=body, headers=headers)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    while not (await resp.content.readline()).startswith(b"data:"):
        pass
    return resp


async def working_task(request: web.Request, body: dict[str, Any]) -> web.Response:
    """Task `t`, working; for any other id, not a task (a broken agent)."""
    result = {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "working"}}
    if body["params"]["id"] != "t":
        result = {"kind": "message", "messageId": "x", "role": "agent", "parts": []}
    return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result})


async def _sse_streams(http: aiohttp.ClientSession, base: str, each: int,
                       ) -> list[aiohttp.ClientResponse]:
    """``each`` streams of JSON-RPC v0.3, JSON-RPC v1.0 and REST v1.0, and v1.0
    subscriptions (the gateway sends a v0.3 backend's task first: its own wrapper)."""
    v10 = {"A2A-Version": "1.0"}
    opened: list[aiohttp.ClientResponse] = []
    for i in range(each):
        opened.append(await _open_sse(http, base + "/", rpc_body(
            "message/stream", {"message": j03_message(f"a{i}")}, rid=i)))
        opened.append(await _open_sse(http, base + "/", rpc_body(
            "SendStreamingMessage", {"message": p10_message(f"b{i}")}, rid=i), v10))
        opened.append(await _open_sse(http, base + "/message:stream",
                                      {"message": p10_message(f"c{i}")}, v10))
        opened.append(await _open_sse(http, base + "/", rpc_body(
            "SubscribeToTask", {"id": "t"}, rid=i), v10))
    return opened


def _grpc_stream(channel: grpc.aio.Channel, text: str) -> Any:
    """A v1.0 SendStreamingMessage call, events as bytes."""
    request = pb.SendMessageRequest(message=pb.Message(
        message_id=text, role=pb.ROLE_USER, parts=[pb.Part(text=text)]))
    return channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")(
        request.SerializeToString(), metadata=(("a2a-version", "1.0"),))


async def _grpc_end(call: Any) -> tuple[list[pb.StreamResponse], grpc.StatusCode]:
    """A gRPC stream read to its end: its events, and its status (a status other than OK
    raises here)."""
    events = []
    while (raw := await call.read()) is not grpc.aio.EOF:
        events.append(pb.StreamResponse.FromString(raw))
    code: grpc.StatusCode = await call.code()
    return events, code


async def test_sigterm_ends_every_open_stream_cleanly_and_logs_only_json(
        tmp_path: Path) -> None:
    """SIGTERM with SSE (JSON-RPC v0.3 and v1.0, REST v1.0, subscriptions) and gRPC
    streams open, and SSE streams not yet opened: the process exits 0 within its grace;
    every open SSE response ends properly (its last chunk, no reset, no error frame),
    every unopened one with an error in its dialect, every gRPC stream with its event and
    OK (README "Shutdown"); stdout and stderr are JSON lines only. A stream's wrappers
    left the streams they wrap open, for the loop's end to close all at once: `RuntimeError:
    generator didn't stop after athrow()` on stderr.

    Each gRPC stream is inside its first write when the drain comes (forced: a relay
    holds the event half-way until an SSE stream has ended, so after the drain began).
    The drain cancelled that write; grpc.aio then sent the stream's initial metadata a
    second time with its status, gRPC's core refused the batch (TOO_MANY_OPERATIONS), and
    the client got UNAVAILABLE "Cancelling all calls" once the grace ran out."""
    port, grpc_port = free_port(), free_port()
    each = 3
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.handlers["message/stream"] = backend.handlers["tasks/resubscribe"] = ticking_sse
        backend.handlers["tasks/get"] = working_task
        config = write_config(tmp_path / "gw.yaml", {
            "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
            "tenants": {"b": v03(backend.url)}, "default_tenant": "b",
            "shutdown_grace": SHUTDOWN_GRACE, "reload_interval": 0})
        with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
            proc = subprocess.Popen(gateway_cmd(config), stdout=out, stderr=err)
        relay = HeldRelay(grpc_port, budget=256 * 1024)
        try:
            await asyncio.to_thread(wait_for_port, port, 30, proc)
            sse = await _sse_streams(http, f"http://127.0.0.1:{port}", each)
            # Streams still waiting for their first event (both SSE kinds of answer).
            silent = [asyncio.create_task(post(
                http, f"http://127.0.0.1:{port}/", rpc_body("message/stream", {
                    "message": j03_message(f"silent{i}")}, rid=f"silent{i}")))
                for i in range(each)]
            silent.append(asyncio.create_task(post(
                http, f"http://127.0.0.1:{port}/message:stream",
                {"message": p10_message("silent-rest")}, headers={"A2A-Version": "1.0"})))
            await wait_until(lambda: sum(str(b.get("params")).count("silent")
                                         for b in backend.seen) >= each + 1,
                             "the silent streams at the backend")
            # Subscriptions that failed before SIGTERM (the agent's task lookup is broken)
            # left the backend's stream open until the loop's end, once.
            for i in range(each):
                reply = await post(http, f"http://127.0.0.1:{port}/", rpc_body(
                    "SubscribeToTask", {"id": f"gone{i}"}, rid=i), headers={"A2A-Version": "1.0"})
                assert reply[2]["error"]["code"] == -32006, reply  # InvalidAgentResponse
            # One connection per gRPC stream, through the relay: once a connection's
            # budget is through, its stream is writing its big event, and stays there.
            async with relay.running() as relay_port, contextlib.AsyncExitStack() as stack:
                texts = [f"big{i}" for i in range(each)]
                calls = []
                for text in texts:
                    channel = await stack.enter_async_context(grpc.aio.insecure_channel(
                        f"127.0.0.1:{relay_port}",
                        options=[("grpc.max_receive_message_length", -1),
                                 ("grpc.use_local_subchannel_pool", 1)]))  # its own
                    calls.append(_grpc_stream(channel, text))
                for _ in range(1000):  # bounded: 10 s
                    if len(relay.held) == each:
                        break
                    await asyncio.sleep(0.01)
                await asyncio.wait_for(asyncio.gather(*(h.wait() for h in relay.held)), 10)
                started = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                # Read as clients do, all at once. A reset would raise here (aiohttp: the
                # chunked body broke off; gRPC: a status other than OK).
                sse_reads = [asyncio.ensure_future(asyncio.wait_for(r.content.read(), 10))
                             for r in sse]
                # An SSE stream ended: the drain has cancelled every stream it cancels.
                await asyncio.wait(sse_reads, return_when=asyncio.FIRST_COMPLETED)
                relay.release()
                tails, ends, unopened = await asyncio.gather(
                    asyncio.gather(*sse_reads),
                    asyncio.gather(*(asyncio.wait_for(_grpc_end(call), 10) for call in calls),
                                   return_exceptions=True),
                    asyncio.gather(*(asyncio.wait_for(t, 10) for t in silent)))
            code = await asyncio.to_thread(proc.wait, SHUTDOWN_GRACE + 10)
            elapsed = time.monotonic() - started
        finally:
            stop_process(proc)
    frames = [frame.strip() for tail in tails for frame in tail.split(b"\n\n") if frame.strip()]
    # Each an event (its SSE id and, first, the retry hint, then its data), none an error.
    assert frames and all(b"data: " in f and b"error" not in f for f in frames)
    # Every gRPC stream: the events it was sent, each whole, then OK.
    codes = [end if isinstance(end, BaseException) else end[1] for end in ends]
    assert codes == [grpc.StatusCode.OK] * each, codes
    for text, (got, _) in zip(texts, ends, strict=True):  # type: ignore[misc]
        assert got and [(e.status_update.task_id, e.status_update.status.state,
                         e.status_update.status.message.parts[0].text) for e in got] == [
            ("t", pb.TASK_STATE_WORKING, text * (BIG // len(text)))] * len(got)
    # Not yet opened: an error in the client's dialect, "unavailable, retry" (README
    # "Shutdown"), not a reset after the grace. JSON-RPC: a stream of one error frame.
    *rpc_replies, rest_reply = unopened
    errors = [json.loads(text.removeprefix("data: ")) for _, _, text in rpc_replies]
    assert [(f["id"], f["error"]["code"], f["error"]["data"]["reason"]) for f in errors] == [
        (f"silent{i}", -32603, "BACKEND_UNAVAILABLE") for i in range(each)]
    assert (rest_reply[0], rest_reply[2]["error"]["status"]) == (502, "UNAVAILABLE")
    assert code == 0
    assert elapsed < SHUTDOWN_GRACE  # streams end at once; no unary call held it
    lines = [(name, line) for name in ("out", "err")
             for line in (tmp_path / name).read_text().splitlines()]
    bad = [f"{name}: {line}" for name, line in lines
           if not line.startswith("{") or "Traceback" in line or "RuntimeError" in line]
    assert bad == [], "\n".join(bad[:40])
    events = [json.loads(line)["event"] for _, line in lines]
    assert events.count("stopped") == 1
