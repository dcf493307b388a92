"""Tracing (gateway/observability/tracing.py): W3C trace context across dialect pairs, spans, OTLP.

    client ──JSON-RPC (v0.3 or v1.0)──▶ B ──gRPC (v1.0)──▶ A ──JSON-RPC v0.3──▶ recorder ──▶ demo
    client ──gRPC (v1.0 or v0.3)──────────────────────────▶ A ──JSON-RPC v0.3──▶ recorder ──▶ demo

The recorder is a tiny HTTP proxy in front of the demo agent that keeps the headers of
every request it passes on: what "the backend receives".
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as v03_grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc
from aiohttp import web
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from gateway.observability import tracing
from tests.support.helpers import MakeGateway, free_port, serving, v03
from tests.support.waiting import wait_until
from translators.webhooks import RelayTarget

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
TRACESTATE = "vendor=abc,other=1"
TRACED = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
MEMORY = {"exporter": "memory"}


def p10_send(text: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{text}", role=pb.ROLE_USER, parts=[pb.Part(text=text)]))


def p03_send(text: str) -> v03pb.SendMessageRequest:
    return v03pb.SendMessageRequest(request=v03pb.Message(
        message_id=f"m-{text}", role=v03pb.ROLE_USER, content=[v03pb.Part(text=text)]),
        configuration=v03pb.SendMessageConfiguration(blocking=True))


class Recorder:
    def __init__(self, url: str, seen: list[dict[str, str]]) -> None:
        self.url = url
        self.seen = seen

    def last_trace_id(self) -> str:
        return self.seen[-1]["traceparent"].split("-")[1]


@pytest.fixture
async def recorder(demo_agent: str) -> AsyncIterator[Recorder]:
    seen: list[dict[str, str]] = []
    session = aiohttp.ClientSession()

    async def proxy(request: web.Request) -> web.Response:
        seen.append({k.lower(): v for k, v in request.headers.items()})
        body = await request.read()
        async with session.post(demo_agent, data=body, headers={
                "Content-Type": request.headers.get("Content-Type", "application/json")}) as r:
            return web.Response(body=await r.read(), status=r.status,
                                content_type=r.content_type)

    app = web.Application()
    app.router.add_post("/", proxy)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield Recorder(f"http://127.0.0.1:{port}/", seen)
    await runner.cleanup()
    await session.close()


class Chain:
    def __init__(self, url: str, a_grpc: str) -> None:
        self.url = url  # B's JSON-RPC endpoint (its backend: A over gRPC v1.0)
        self.a_grpc = a_grpc  # A's gRPC listener (its backend: the recorder, JSON-RPC v0.3)


async def make_chain(make_gateway: MakeGateway, recorder: Recorder, **extra: Any) -> Chain:
    a_grpc = free_port()
    await make_gateway({"demo": v03(recorder.url)}, grpc_port=a_grpc, **extra)
    url = await make_gateway({"viaGrpc": v03(f"grpc://127.0.0.1:{a_grpc}", "1.0", "GRPC")},
                             **extra)
    return Chain(url + "/", f"127.0.0.1:{a_grpc}")


async def rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as resp:
        reply: dict[str, Any] = await resp.json()
        return reply


def j03_message(text: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": f"m-{text}-{os.urandom(3).hex()}", "role": "user",
            "parts": [{"kind": "text", "text": text}]}


def p10_message(text: str) -> dict[str, Any]:
    return {"messageId": f"m-{text}-{os.urandom(3).hex()}", "role": "ROLE_USER",
            "parts": [{"text": text}]}


def spans() -> list[Any]:
    exporter = tracing.memory_exporter()
    assert exporter is not None
    return list(exporter.get_finished_spans())


def hexid(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def only(items: list[Any], **attrs: Any) -> Any:
    """The one SERVER span with these attributes."""
    found = [s for s in items if s.kind.name == "SERVER"
             and all(s.attributes.get(k) == v for k, v in attrs.items())]
    assert len(found) == 1, (attrs, [(s.name, dict(s.attributes)) for s in items])
    return found[0]


# ---------------------------------------------------------------- tracing on


@pytest.mark.parametrize("client", ["0.3", "1.0"])
async def test_jsonrpc_client_to_grpc_backend(client: str, make_gateway: MakeGateway,
                                              recorder: Recorder,
                                              http: aiohttp.ClientSession) -> None:
    chain = await make_chain(make_gateway, recorder, tracing=MEMORY)
    if client == "0.3":
        reply = await rpc(http, chain.url, "message/send", {"message": j03_message("hi")},
                          TRACED)
    else:
        reply = await rpc(http, chain.url, "SendMessage", {"message": p10_message("hi")},
                          {**TRACED, "A2A-Version": "1.0"})
    assert "result" in reply, reply
    # The backend behind both gateways is in the client's trace.
    assert recorder.last_trace_id() == TRACE_ID
    assert recorder.seen[-1]["traceparent"] != TRACEPARENT  # a child of the gateway's span
    assert recorder.seen[-1]["tracestate"] == TRACESTATE

    done = [s for s in spans() if hexid(s.context.trace_id, 32) == TRACE_ID]
    b_server = only(done, **{"a2a.client.binding": "JSONRPC", "a2a.tenant": "viaGrpc"})
    assert b_server.name == "A2A SendMessage" and b_server.kind.name == "SERVER"
    assert hexid(b_server.parent.span_id, 16) == PARENT_ID and b_server.parent.is_remote
    assert dict(b_server.attributes) | {"a2a.request_id": "-"} == {
        "a2a.operation": "SendMessage", "a2a.request_id": "-", "a2a.tenant": "viaGrpc",
        "a2a.client.version": client, "a2a.client.binding": "JSONRPC",
        "a2a.backend.version": "1.0", "a2a.backend.binding": "GRPC", "a2a.forwarded": False}
    b_client = next(s for s in done if s.name == "backend SendMessage"
                    and s.parent.span_id == b_server.context.span_id)
    assert b_client.kind.name == "CLIENT"
    assert b_client.attributes["a2a.backend.binding"] == "GRPC"
    translate = next(s for s in done if s.name == "translate SendMessage"
                     and s.parent.span_id == b_server.context.span_id)
    assert translate.kind.name == "INTERNAL"
    # Gateway A read the trace context from B's gRPC metadata.
    a_server = only(done, **{"a2a.client.binding": "GRPC"})
    assert a_server.parent.span_id == b_client.context.span_id
    assert a_server.attributes["a2a.backend.binding"] == "JSONRPC"
    assert a_server.attributes["a2a.client.version"] == "1.0"


@pytest.mark.parametrize("client", ["0.3", "1.0"])
async def test_grpc_client_to_jsonrpc_backend(client: str, make_gateway: MakeGateway,
                                              recorder: Recorder) -> None:
    chain = await make_chain(make_gateway, recorder, tracing=MEMORY)
    md = tuple(TRACED.items())
    async with grpc.aio.insecure_channel(chain.a_grpc) as channel:
        if client == "0.3":
            await v03_grpc.A2AServiceStub(channel).SendMessage(p03_send("hi"), metadata=md)
        else:
            await pb_grpc.A2AServiceStub(channel).SendMessage(p10_send("hi"),
                                                metadata=(*md, ("a2a-version", "1.0")))
    assert recorder.last_trace_id() == TRACE_ID
    done = [s for s in spans() if hexid(s.context.trace_id, 32) == TRACE_ID]
    server = only(done, **{"a2a.client.binding": "GRPC"})
    assert server.kind.name == "SERVER" and hexid(server.parent.span_id, 16) == PARENT_ID
    assert server.attributes["a2a.client.version"] == client
    assert server.attributes["a2a.backend.version"] == "0.3"
    assert server.attributes["a2a.forwarded"] is False
    backend = next(s for s in done if s.name == "backend SendMessage")
    assert backend.parent.span_id == server.context.span_id
    # The recorder's traceparent names the CLIENT span as its parent.
    assert recorder.seen[-1]["traceparent"].split("-")[2] == hexid(backend.context.span_id, 16)


async def test_new_trace_without_client_context_and_errors(
        make_gateway: MakeGateway, recorder: Recorder, http: aiohttp.ClientSession) -> None:
    """No traceparent from the client: the gateway starts the trace; a failed call marks
    its span."""
    url = await make_gateway({"demo": v03(recorder.url)}, tracing=MEMORY)
    await rpc(http, url + "/", "message/send", {"message": j03_message("hi")})
    trace_id = recorder.last_trace_id()
    server = only([s for s in spans() if hexid(s.context.trace_id, 32) == trace_id],
                  **{"a2a.operation": "SendMessage"})
    assert server.parent is None
    assert server.attributes["a2a.forwarded"] is True  # same dialect on both sides
    reply = await rpc(http, url + "/", "tasks/get", {"id": "nope"}, TRACED)
    assert "error" in reply
    failed = only([s for s in spans() if hexid(s.context.trace_id, 32) == TRACE_ID],
                  **{"a2a.operation": "GetTask"})
    assert failed.status.status_code.name == "ERROR"
    assert failed.attributes["a2a.error"] == "TASK_NOT_FOUND"


async def test_log_line_has_trace_id(make_gateway: MakeGateway, recorder: Recorder,
                                     http: aiohttp.ClientSession,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    url = await make_gateway({"demo": v03(recorder.url)})  # tracing off: the client's id
    await rpc(http, url + "/", "message/send", {"message": j03_message("hi")}, TRACED)
    out = capsys.readouterr()
    text = out.out + out.err  # JSON lines when configured, key=value in tests
    assert f'"trace_id": "{TRACE_ID}"' in text or f"trace_id={TRACE_ID}" in text


# ---------------------------------------------------------------- tracing off


async def test_off_passes_trace_context_through_unchanged(
        make_gateway: MakeGateway, recorder: Recorder, http: aiohttp.ClientSession) -> None:
    chain = await make_chain(make_gateway, recorder)
    assert not tracing.enabled and tracing.memory_exporter() is None
    await rpc(http, chain.url, "message/send", {"message": j03_message("hi")}, TRACED)
    # JSON-RPC in, gRPC metadata between the gateways, HTTP headers to the backend.
    assert recorder.seen[-1]["traceparent"] == TRACEPARENT
    assert recorder.seen[-1]["tracestate"] == TRACESTATE
    async with grpc.aio.insecure_channel(chain.a_grpc) as channel:
        await v03_grpc.A2AServiceStub(channel).SendMessage(p03_send("hi"), metadata=tuple(TRACED.items()))
    assert recorder.seen[-1]["traceparent"] == TRACEPARENT
    await rpc(http, chain.url, "message/send", {"message": j03_message("hi")})
    assert "traceparent" not in recorder.seen[-1]
    assert not tracing.enabled and tracing.memory_exporter() is None


# ---------------------------------------------------------------- OTLP export


async def test_otlp_http_exporter_delivers(make_gateway: MakeGateway, recorder: Recorder,
                                           http: aiohttp.ClientSession) -> None:
    received: asyncio.Queue[trace_service_pb2.ExportTraceServiceRequest] = asyncio.Queue()

    async def traces(request: web.Request) -> web.Response:
        message = trace_service_pb2.ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        await received.put(message)
        body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        url = await make_gateway({"demo": v03(recorder.url)}, tracing={
            "exporter": "otlp-http", "endpoint": f"http://127.0.0.1:{port}",
            "service_name": "gw-under-test", "headers": {"x-api-key": "k"}})
        await rpc(http, url + "/", "message/send", {"message": j03_message("hi")}, TRACED)
        assert await asyncio.to_thread(tracing.flush)
        names = await _names(received, "gw-under-test")
        assert {"A2A SendMessage", "backend SendMessage", "translate SendMessage"} <= names
    finally:
        await runner.cleanup()


async def test_otlp_grpc_exporter_delivers(make_gateway: MakeGateway, recorder: Recorder,
                                           http: aiohttp.ClientSession) -> None:
    received: asyncio.Queue[trace_service_pb2.ExportTraceServiceRequest] = asyncio.Queue()

    class Collector(trace_service_pb2_grpc.TraceServiceServicer):
        async def Export(self, request: Any, context: Any) -> Any:
            await received.put(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Collector(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        url = await make_gateway({"demo": v03(recorder.url)}, tracing={
            "exporter": "otlp-grpc", "endpoint": f"http://127.0.0.1:{port}"})
        await rpc(http, url + "/", "message/send", {"message": j03_message("hi")}, TRACED)
        assert await asyncio.to_thread(tracing.flush)
        names = await _names(received, "a2a-gateway")
        assert "A2A SendMessage" in names and "backend SendMessage" in names
    finally:
        await server.stop(None)


async def _names(received: asyncio.Queue[Any], service: str) -> set[str]:
    message = await asyncio.wait_for(received.get(), 10)
    names: set[str] = set()
    for rs in message.resource_spans:
        attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
        assert attrs["service.name"] == service
        for ss in rs.scope_spans:
            for span in ss.spans:
                if span.trace_id.hex() == TRACE_ID:
                    names.add(span.name)
    return names


# ---------------------------------------------------------------- push relay


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, asyncio.Queue[dict[str, str]]]]:
    received: asyncio.Queue[dict[str, str]] = asyncio.Queue()

    async def hook(request: web.Request) -> web.Response:
        await received.put({k.lower(): v for k, v in request.headers.items()})
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/{name}", hook)
    async with serving(app) as base:
        yield f"{base}", received


@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
async def test_relayed_delivery_carries_trace_context(
        on: bool, make_gateway: MakeGateway, demo_agent: str,
        webhook: tuple[str, asyncio.Queue[dict[str, str]]],
        http: aiohttp.ClientSession) -> None:
    """A backend's notification with a traceparent reaches the client's webhook in the
    same trace (unchanged when tracing is off, as a delivery span's child when on)."""
    from gateway.config.models import parse_config
    from gateway.relay.hooks import PushRelay

    base, received = webhook
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    relay_settings = {"webhook_allowlist": ["127.0.0.1"], "keys": [key]}
    url = await make_gateway({"demo": v03(demo_agent)}, push_relay=relay_settings,
                             **({"tracing": MEMORY} if on else {}))
    sealer = PushRelay(parse_config({"tenants": {"t": v03("http://127.0.0.1:1/")},
                                     "push_relay": relay_settings}), Any, environ={})
    target = RelayTarget(url=f"{base}/hook", client_version="1.0", backend_version="0.3",
                         tenant="demo", relay_token="relay-tok", issued_at=int(time.time()),
                         token="tok", authentication=None, config_id="c1", task_id="t1")
    event = {"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "working"}}
    async with http.post(f"{url}/_relay/{sealer.sealer.seal(target)}", json=event,
                         headers={"Authorization": "Bearer relay-tok", **TRACED}) as resp:
        assert resp.status == 202, await resp.text()
    headers = await asyncio.wait_for(received.get(), 10)
    if not on:
        assert headers["traceparent"] == TRACEPARENT
        assert headers["tracestate"] == TRACESTATE
        return
    assert headers["traceparent"].split("-")[1] == TRACE_ID
    # The span ends just after the webhook answered.
    (span,) = await wait_until(
        lambda: [s for s in spans() if s.name == "push relay delivery"], "the delivery's span")
    assert hexid(span.parent.span_id, 16) == PARENT_ID
    assert headers["traceparent"].split("-")[2] == hexid(span.context.span_id, 16)
    assert span.attributes["a2a.tenant"] == "demo"
    assert span.attributes["a2a.relay.attempts"] == 1


async def test_stream_and_rest_ingress(make_gateway: MakeGateway, recorder: Recorder,
                                       http: aiohttp.ClientSession) -> None:
    """A stream's spans last as long as it does; the REST ingress reads traceparent too."""
    chain = await make_chain(make_gateway, recorder, tracing=MEMORY)
    body = {"jsonrpc": "2.0", "id": 7, "method": "message/stream",
            "params": {"message": j03_message("task: s")}}
    async with http.post(chain.url, json=body, headers=TRACED) as resp:
        events = [line async for line in resp.content if line.startswith(b"data:")]
    assert events and recorder.last_trace_id() == TRACE_ID
    done = [s for s in spans() if hexid(s.context.trace_id, 32) == TRACE_ID]
    server = only(done, **{"a2a.client.binding": "JSONRPC"})
    assert server.name == "A2A SendStreamingMessage"
    assert server.attributes["a2a.stream.events"] == len(events)
    backend = next(s for s in done if s.name == "backend SendStreamingMessage"
                   and s.parent.span_id == server.context.span_id)
    assert backend.attributes["a2a.stream.events"] == len(events)
    assert backend.status.status_code.name == "UNSET"

    rest_tp = f"00-{'1' * 32}-{PARENT_ID}-01"
    async with http.post(chain.url + "message:send", json={"message": p10_message("hi")},
                         headers={"traceparent": rest_tp, "A2A-Version": "1.0"}) as resp:
        assert resp.status == 200, await resp.text()
    assert recorder.last_trace_id() == "1" * 32
    rest_server = only([s for s in spans() if hexid(s.context.trace_id, 32) == "1" * 32],
                       **{"a2a.client.binding": "HTTP+JSON"})
    assert rest_server.attributes["a2a.client.version"] == "1.0"


async def test_losses_are_span_attributes(make_gateway: MakeGateway, recorder: Recorder,
                                          http: aiohttp.ClientSession) -> None:
    """v0.3 client → v1.0 backend: GetTask cannot carry metadata (README "Losses")."""
    chain = await make_chain(make_gateway, recorder, tracing=MEMORY)
    task = (await rpc(http, chain.url, "message/send", {"message": j03_message("task: l")}))[
        "result"]
    reply = await rpc(http, chain.url, "tasks/get", {"id": task["id"], "metadata": {"a": 1}},
                      TRACED)
    assert reply["result"]["id"] == task["id"]
    done = [s for s in spans() if hexid(s.context.trace_id, 32) == TRACE_ID]
    server = only(done, **{"a2a.client.binding": "JSONRPC", "a2a.operation": "GetTask"})
    assert server.attributes["a2a.dropped"] == ("params.metadata",)
