"""Issue 27, zero tracebacks for any input: what a backend sends is input too. An answer
a newer peer may give (an enum number no version names) reaches every client dialect in
its shape, never as an InternalError with a traceback in the log."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from aiohttp import web
from structlog.testing import capture_logs

from tests.hardening.hardening_support import JSON, ScriptedBackend, sse_lines
from tests.support.helpers import MakeGateway, free_port, v03

STATE = 42  # a TaskState number neither version names


async def unknown_state_stream(request: web.Request, body: JSON) -> web.StreamResponse:
    """A v1.0 agent's stream: the task, then a status whose state is a number no
    version names (ProtoJSON keeps unknown enum numbers), then the end."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for result in ({"task": {"id": "t", "contextId": "c", "status": {
                        "state": "TASK_STATE_WORKING"}}},
                   {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {
                       "state": STATE}}},
                   {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {
                       "state": "TASK_STATE_COMPLETED"}}}):
        event = {"jsonrpc": "2.0", "id": body["id"], "result": result}
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
    return response


@pytest.fixture
async def setup(make_gateway: MakeGateway) -> Any:
    async with ScriptedBackend().running() as backend:
        backend.handlers["SendStreamingMessage"] = unknown_state_stream
        grpc_port = free_port()
        gw = await make_gateway({"ten": v03(backend.url, "1.0")}, grpc_port=grpc_port)
        async with aiohttp.ClientSession() as http:
            yield gw, grpc_port, http


P03_SEND = {"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}}


async def test_an_unknown_state_from_a_backend_streams_to_v03_clients(setup: Any) -> None:
    gw, grpc_port, http = setup
    with capture_logs() as logs:
        async with http.post(gw + "/ten/v1/message:stream", json=P03_SEND) as resp:
            assert resp.status == 200
            events = await sse_lines(resp)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stream = channel.unary_stream("/a2a.v1.A2AService/SendStreamingMessage")(
                v03pb.SendMessageRequest(request=v03pb.Message(
                    message_id="m", role=v03pb.ROLE_USER, content=[v03pb.Part(text="x")]),
                ).SerializeToString(), metadata=(("x-a2a-tenant", "ten"),))
            grpc_events = [v03pb.StreamResponse.FromString(raw) async for raw in stream]
    # v0.3 REST: the unknown state as its number (ProtoJSON), not final; then the end.
    assert [e.get("statusUpdate", {}).get("status", {}).get("state") for e in events] == [
        None, STATE, "TASK_STATE_COMPLETED"]
    assert [e["statusUpdate"].get("final", False) for e in events[1:]] == [False, True]
    assert [e.status_update.status.state for e in grpc_events[1:]] == [STATE, 3]
    assert [line for line in logs if "exc_info" in line or line["log_level"] == "error"] == []
    assert [line["outcome"] for line in logs if line["event"] == "call"] == ["ok", "ok"]


async def test_an_unknown_state_from_a_backend_answers_v03_json_rpc(setup: Any) -> None:
    gw, _, http = setup
    j03 = {"kind": "message", "messageId": "m", "role": "user",
           "parts": [{"kind": "text", "text": "x"}]}
    with capture_logs() as logs:
        async with http.post(gw + "/ten", json={"jsonrpc": "2.0", "id": 1, "method":
                                               "message/stream", "params": {"message": j03}},
                             ) as resp:
            events = await sse_lines(resp)
    states = [e["result"].get("status", {}).get("state") for e in events]
    assert states == ["working", "unknown", "completed"], events
    assert [line for line in logs if "exc_info" in line or line["log_level"] == "error"] == []
