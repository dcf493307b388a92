"""The gRPC egress against a scripted fake backend: what it sends, how it reads errors,
and that a client who goes away ends the backend call.

The fake serves both packages with raw bytes and acts on the first text of the message:
`md` echoes the metadata and tenant it got, `err:<how>` fails in a chosen way, `sleep`
never answers in time, `garbage` answers bytes no proto parses, and a stream sends one
Task and then waits until it is cancelled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from prometheus_client import REGISTRY

from gateway.config.models import parse_config
from gateway.observability import metrics
from gateway.server.app import Server
from tests.integration.grpc_support import V10_MD, p03_send, p10_send, v03_stub, v10_stub
from tests.support.helpers import MakeGateway, free_port, v03
from tests.support.waiting import wait_until

V10_HEADERS = dict(V10_MD)


class FakeBackend:
    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.server = grpc.aio.server()
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        handlers = []
        for service, parse in (("lf.a2a.v1.A2AService", self._text10),
                               ("a2a.v1.A2AService", self._text03)):
            handlers.append(grpc.method_handlers_generic_handler(service, {
                "SendMessage": grpc.unary_unary_rpc_method_handler(self._send(parse)),
                "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(self._stream),
            }))
        self.server.add_generic_rpc_handlers(handlers)

    @staticmethod
    def _text10(raw: bytes) -> tuple[str, str]:
        req = pb.SendMessageRequest.FromString(raw)
        return req.message.parts[0].text, req.tenant

    @staticmethod
    def _text03(raw: bytes) -> tuple[str, str]:
        return v03pb.SendMessageRequest.FromString(raw).request.content[0].text, ""

    def _send(self, parse: Callable[[bytes], tuple[str, str]]) -> Any:
        async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
            text, tenant = parse(raw)
            if text == "md":
                md = {k: v for k, v in context.invocation_metadata() if not k.startswith(":")}
                reply = json.dumps({"md": md, "tenant": tenant})
                if parse == self._text03:
                    msg03 = v03pb.Message(message_id="r", role=v03pb.ROLE_AGENT,
                                          content=[v03pb.Part(text=reply)])
                    return v03pb.SendMessageResponse(msg=msg03).SerializeToString()
                msg = pb.Message(message_id="r", role=pb.ROLE_AGENT, parts=[pb.Part(text=reply)])
                return pb.SendMessageResponse(message=msg).SerializeToString()
            if text == "sleep":
                await asyncio.sleep(10)
            if text == "garbage":
                return b"\xff\xff\xff"
            how = text.removeprefix("err:")
            if how == "details":  # v1.0: the reason wins over a code that says otherwise
                info = error_details_pb2.ErrorInfo(reason="TASK_NOT_CANCELABLE",
                                                   domain="a2a-protocol.org")
                detail = any_pb2.Any()
                detail.Pack(info)
                status = status_pb2.Status(code=code_pb2.NOT_FOUND, message="no cancel",
                                           details=[detail])
                await context.abort(grpc.StatusCode.NOT_FOUND, "no cancel", (
                    ("grpc-status-details-bin", status.SerializeToString()),))
            if how == "prefix":  # v0.3: the name prefix wins over the status
                await context.abort(grpc.StatusCode.UNIMPLEMENTED,
                                    "TaskNotCancelableError: Task cannot be canceled")
            if how == "code":
                await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not here")
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "who are you")
            return b""

        return handle

    async def _stream(self, raw: bytes, context: grpc.aio.ServicerContext) -> None:
        task = pb.Task(id="t1", context_id="c1",
                       status=pb.TaskStatus(state=pb.TASK_STATE_WORKING))
        await context.write(pb.StreamResponse(task=task).SerializeToString())
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


@pytest.fixture
async def fake() -> AsyncIterator[FakeBackend]:
    backend = FakeBackend()
    await backend.server.start()
    yield backend
    await backend.server.stop(0)


async def rpc(url: str, method: str, params: Any, headers: dict[str, str]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with aiohttp.ClientSession() as http, http.post(url, json=body,
                                                          headers=headers) as resp:
        reply: dict[str, Any] = await resp.json()
        return reply


def send(text: str) -> dict[str, Any]:
    return {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}


async def gateway_for(make_gateway: MakeGateway, fake: FakeBackend, version: str,
                      **backend: Any) -> str:
    tenant = v03(f"127.0.0.1:{fake.port}", version, "GRPC")
    tenant["backend"].update(backend)
    return await make_gateway({"fake": tenant}, forward_headers=["authorization"]) + "/"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_metadata_sent_to_the_backend(make_gateway: MakeGateway, fake: FakeBackend,
                                            version: str) -> None:
    url = await gateway_for(make_gateway, fake, version, tenant="inner",
                            headers={"x-static": "s"})
    headers = {"A2A-Version": "1.0", "Authorization": "Bearer t", "X-Request-ID": "rid-1",
               "A2A-Extensions": "https://ext.example/a", "Cookie": "no"}
    reply = await rpc(url, "SendMessage", send("md"), headers)
    got = json.loads(reply["result"]["message"]["parts"][0]["text"])
    md = got["md"]
    assert md["authorization"] == "Bearer t" and md["x-request-id"] == "rid-1"
    assert md["x-static"] == "s" and "cookie" not in md
    assert md["a2a-extensions"] == "https://ext.example/a"
    if version == "1.0":
        assert md["a2a-version"] == "1.0" and got["tenant"] == "inner"
    else:  # v0.3: no a2a-version; the tenant travels as metadata, extensions in both keys
        assert "a2a-version" not in md and md["x-a2a-tenant"] == "inner"
        assert md["x-a2a-extensions"] == "https://ext.example/a"


@pytest.mark.parametrize(("version", "text", "code", "reason"), [
    ("1.0", "err:details", -32002, "TASK_NOT_CANCELABLE"),
    ("0.3", "err:prefix", -32002, "TASK_NOT_CANCELABLE"),
    ("1.0", "err:code", -32004, "UNSUPPORTED_OPERATION"),
    ("0.3", "err:other", -32603, "INTERNAL_ERROR"),
    ("1.0", "garbage", -32006, "INVALID_AGENT_RESPONSE"),
])
async def test_backend_errors_are_classified(make_gateway: MakeGateway, fake: FakeBackend,
                                             version: str, text: str, code: int,
                                             reason: str) -> None:
    url = await gateway_for(make_gateway, fake, version)
    reply = await rpc(url, "SendMessage", send(text), {"A2A-Version": "1.0"})
    assert reply["error"]["code"] == code, reply
    assert reply["error"]["data"][0]["reason"] == reason


async def test_unary_timeout(make_gateway: MakeGateway, fake: FakeBackend) -> None:
    url = await gateway_for(make_gateway, fake, "1.0", timeout=0.3)
    reply = await rpc(url, "SendMessage", send("sleep"), {"A2A-Version": "1.0"})
    assert reply["error"]["data"][0]["reason"] == "BACKEND_TIMEOUT"
    assert "(0.3 s;" in reply["error"]["message"]


async def test_stream_idle_timeout(make_gateway: MakeGateway, fake: FakeBackend) -> None:
    url = await gateway_for(make_gateway, fake, "1.0", stream_idle_timeout=0.3)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": send("s")}
    async with aiohttp.ClientSession() as http, http.post(url, json=body,
                                                          headers=V10_HEADERS) as resp:
        events = [json.loads(line[5:]) async for line in resp.content
                  if line.startswith(b"data:")]
    assert "task" in events[0]["result"]
    assert events[-1]["error"]["data"][0]["reason"] == "BACKEND_TIMEOUT"
    await asyncio.wait_for(fake.cancelled.wait(), 5)


async def test_a_journaled_grpc_stream_that_fails_names_its_last_id_in_the_trailers(
        make_gateway: MakeGateway, fake: FakeBackend) -> None:
    """An error after events ends the stream with its status, and (journaled) with the id
    of the last event the client got in trailing metadata (docs/streams.md): where it
    resumes."""
    grpc_port = free_port()
    tenant = v03(f"127.0.0.1:{fake.port}", "1.0", "GRPC")
    tenant["backend"]["stream_idle_timeout"] = 0.3
    await make_gateway({"fake": tenant}, grpc_port=grpc_port, state={
        "path": ":memory:", "journal": {"enabled": True}})
    async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        call = v10_stub(channel).SendStreamingMessage(p10_send("s"), metadata=V10_MD)
        first = await call.read()
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call.read()
    assert failed.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED, failed.value
    trailers = dict(failed.value.trailing_metadata())
    assert trailers["last-event-id"] == first.task.metadata["a2a-gateway/event-id"], trailers


@pytest.mark.parametrize("client", ["grpc", "jsonrpc"])
async def test_client_going_away_cancels_the_backend_call(
        make_gateway: MakeGateway, fake: FakeBackend, client: str) -> None:
    """Without a hold (a client's stream is held only with `state.journal.hold` > 0)."""
    grpc_port = free_port()
    tenant = v03(f"127.0.0.1:{fake.port}", "1.0", "GRPC")
    url = await make_gateway({"fake": tenant}, grpc_port=grpc_port, state={
        "path": ":memory:", "journal": {"enabled": True, "hold": 0}}) + "/"
    await _leave_a_stream(url, grpc_port, client)
    await asyncio.wait_for(fake.cancelled.wait(), 5)


@pytest.mark.parametrize("client", ["grpc", "jsonrpc"])
async def test_a_held_stream_whose_backend_is_silent_ends_when_its_hold_runs_out(
        make_gateway: MakeGateway, fake: FakeBackend, client: str) -> None:
    """The backend's stream is read on for `state.journal.hold` seconds after its client
    left (tests/integration/test_stream_hold.py), then cancelled, even when the backend
    sends nothing more (no write finds the client gone)."""
    grpc_port = free_port()
    tenant = v03(f"127.0.0.1:{fake.port}", "1.0", "GRPC")
    url = await make_gateway({"fake": tenant}, grpc_port=grpc_port, state={
        "path": ":memory:", "journal": {"enabled": True, "hold": 3}}) + "/"
    before = _client_cancelled()
    await _leave_a_stream(url, grpc_port, client)
    # The gateway has seen the client leave (the call is counted)...
    await wait_until(lambda: _client_cancelled() > before, "the leaving counted")
    # ...and still holds the backend's stream (without a hold it is cancelled at once:
    # test_client_going_away_cancels_the_backend_call), until the hold runs out.
    assert not fake.cancelled.is_set()
    await asyncio.wait_for(fake.cancelled.wait(), 10)


def _client_cancelled() -> float:
    metrics.flush()  # counts are batched per pass of the loop
    return sum(sample.value for family in REGISTRY.collect()
               if family.name == "a2a_gateway_calls" for sample in family.samples
               if sample.name == "a2a_gateway_calls_total"
               and sample.labels.get("tenant") == "fake"
               and sample.labels.get("outcome") == "CLIENT_CANCELLED")


async def _leave_a_stream(url: str, grpc_port: int, client: str) -> None:
    if client == "grpc":
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            call = v03_stub(channel).SendStreamingMessage(p03_send("s"))
            first = await call.read()
            assert first.task.id == "t1"
            call.cancel()
    else:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                "params": send("s")}
        async with aiohttp.ClientSession() as http, http.post(
                url, json=body, headers=V10_HEADERS) as resp:
            event = await resp.content.readuntil(b"\n\n")
            assert b"\ndata:" in event
        # leaving the block closes the connection mid-stream


@pytest.mark.parametrize("journaled", [False, True], ids=["plain", "journaled"])
async def test_shutdown_ends_open_grpc_streams_cleanly(fake: FakeBackend,
                                                       journaled: bool) -> None:
    """Journaled, the end also names the id of the last event in its trailers
    (`last-event-id`, docs/streams.md): where the client resumes on another gateway. Its
    backend stream is then read on into the journal for `hold` (here 1 s: this backend
    never ends its task), within the grace."""
    port = free_port()
    state = {"path": ":memory:", "journal": {"enabled": journaled, "hold": 1}}
    config = parse_config({
        "listen": {"http": f"127.0.0.1:{free_port()}", "grpc": f"127.0.0.1:{port}"},
        "tenants": {"fake": v03(f"127.0.0.1:{fake.port}", "1.0", "GRPC")},
        "shutdown_grace": 60, "state": state})
    server = Server(config)
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = v10_stub(channel).SendStreamingMessage(p10_send("s"), metadata=V10_MD)
        first = await call.read()
        assert first.task.id == "t1"
        stopping = asyncio.create_task(server.stop())
        assert await call.read() is grpc.aio.EOF  # an end of stream, not a reset
        assert await call.code() == grpc.StatusCode.OK
        event_id = first.task.metadata["a2a-gateway/event-id"] if journaled else None
        assert dict(await call.trailing_metadata()).get("last-event-id") == event_id
        # The stream did not wait out the grace: a stop that did would take 60 s, 12
        # times this bound (no elapsed time to compare on a loaded machine).
        await asyncio.wait_for(stopping, 5)
    await asyncio.wait_for(fake.cancelled.wait(), 5)
