"""Per-principal caps on open streams through the whole gateway (429 with Retry-After,
the slot back when a stream closes), and the gRPC reflection switch."""

from __future__ import annotations

import aiohttp
import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.security.security_support import RecordingAgent, keys, post, rpc_send
from tests.support.helpers import MakeGateway, free_port
from tests.support.waiting import wait_until

KEY, OTHER = "streamer-0123456789", "other-0123456789"


async def test_a_principal_at_its_stream_cap_is_refused_until_one_closes(
        make_gateway: MakeGateway) -> None:
    async with RecordingAgent().running() as agent:
        gw = await make_gateway({"t": {"backend": {"url": agent.url, "version": "0.3"},
                                       "auth": {"api_keys": keys(s=KEY, o=OTHER),
                                                "rate_limits": {
                                                    "max_streams_per_principal": 2}}}})
        stream = {**rpc_send(), "method": "message/stream"}
        async with aiohttp.ClientSession() as http:
            opened = []
            for _ in range(2):
                resp = await http.post(gw + "/t", json=stream, headers={"X-API-Key": KEY})
                assert resp.status == 200
                await resp.content.readline()  # the first event: the stream is open
                opened.append(resp)
            status, headers, reply = await post(http, gw + "/t", stream, {"X-API-Key": KEY})
            assert status == 429 and headers["Retry-After"] == "1"
            assert reply["error"]["code"] == -32603
            assert "2 streams open" in reply["error"]["message"]
            # Another principal has its own slots; unary calls are not streams.
            resp = await http.post(gw + "/t", json=stream, headers={"X-API-Key": OTHER})
            assert resp.status == 200
            resp.close()
            status, _, _ = await post(http, gw + "/t", rpc_send(), {"X-API-Key": KEY})
            assert status == 200
            opened.pop().close()
            async def admitted() -> bool:  # once the gateway notices the closed stream
                resp = await http.post(gw + "/t", json=stream, headers={"X-API-Key": KEY})
                resp.close()
                return resp.status == 200

            await wait_until(admitted, "a stream admitted again", interval=0.05)
            for resp in opened:
                resp.close()


@pytest.mark.parametrize("enabled", [True, False])
async def test_grpc_reflection_can_be_turned_off(make_gateway: MakeGateway, demo_agent: str,
                                                 enabled: bool) -> None:
    port = free_port()
    await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"}}},
                       grpc_port=port, listen_grpc_reflection=enabled)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        if enabled:
            replies = [r async for r in stub.ServerReflectionInfo(iter([request]))]
            assert replies and replies[0].list_services_response.service
        else:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                _ = [r async for r in stub.ServerReflectionInfo(iter([request]))]
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
