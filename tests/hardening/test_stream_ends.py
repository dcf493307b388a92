"""How a stream that its client leaves ends: counted as CLIENT_CANCELLED on every
binding, and freed at once, without garbage that only a full collection reclaims
(found by the 10,000-idle-streams bench: one collection after they closed took ~1 s)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb
from hardening_support import ScriptedBackend, endless_sse, j03_message, rpc_body
from helpers import MakeGateway, free_port, v03
from prometheus_client import REGISTRY

from gateway import metrics

STREAMS = 10


def _cancelled(binding: str) -> float:
    metrics.flush()  # the calls of the last moments are batched (gateway/metrics.py)
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
        gw = await make_gateway({"b": v03(backend.url)}, grpc_port=grpc_port,
                                default_tenant="b")
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
            await asyncio.sleep(0.5)  # the gateway sees both kinds of leaving
        for binding, was in before.items():
            assert _cancelled(binding) - was == STREAMS, binding
        assert garbage == [], f"stream handlers left in cycles: {sorted(set(garbage))}"
