"""TLS through the whole gateway, with certificates made here: listeners with mTLS (a
client certificate from the configured CA is served and names the principal; none, or
one from another CA, is refused at the handshake) on HTTP and gRPC, cards that say
https, and TLS toward an HTTPS agent and a TLS gRPC agent that works with the CA bundle
and fails closed without it."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.types import a2a_pb2 as pb

from tests.security.security_support import PKI, RecordingAgent, grpc_send, post, rpc_send
from tests.support.helpers import MakeGateway, free_port


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    return PKI.write(tmp_path)


def client_tls(pki: dict[str, str], who: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki["ca"])
    if who is not None:
        ctx.load_cert_chain(pki[f"{who}_cert"], pki[f"{who}_key"])
    return ctx


def server_tls(pki: dict[str, str]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki["cert"], pki["key"])
    return ctx


async def test_mtls_listeners_serve_a_known_client_and_refuse_others_at_the_handshake(
        make_gateway: MakeGateway, pki: dict[str, str]) -> None:
    async with RecordingAgent().running() as agent:
        grpc_port = free_port()
        gw = await make_gateway(
            {"t": {"backend": {"url": agent.url, "version": "0.3"},
                   "auth": {"allow": [{"principals": ["billing-agent"]}]}}},
            grpc_port=grpc_port,
            auth={"required": True, "mtls": {"principal_from": "subject_cn"},
                  "server_tls": {"cert_file": pki["cert"], "key_file": pki["key"],
                                 "client_ca_file": pki["ca"]}})
        base = gw.replace("http://", "https://")
        async with aiohttp.ClientSession() as http:
            async with http.post(base + "/t", json=rpc_send(),
                                 ssl=client_tls(pki, "client")) as resp:
                assert resp.status == 200 and "from agent" in await resp.text()
            async with http.get(base + "/t/.well-known/agent-card.json",
                                ssl=client_tls(pki, "client")) as resp:
                card = await resp.json()
            assert card["url"].startswith("https://")
            for who in (None, "stranger"):
                with pytest.raises((aiohttp.ClientError, ssl.SSLError, OSError)):
                    async with http.post(base + "/t", json=rpc_send(),
                                         ssl=client_tls(pki, who)) as resp:
                        await resp.read()
            # Plain HTTP on a TLS port is no way around it either.
            with pytest.raises(aiohttp.ClientError):
                await post(http, gw + "/t", rpc_send())
        target = f"127.0.0.1:{grpc_port}"
        files = {k: Path(v).read_bytes() for k, v in pki.items()}
        good = grpc.ssl_channel_credentials(files["ca"], files["client_key"],
                                            files["client_cert"])
        async with grpc.aio.secure_channel(target, good) as channel:
            assert b"from agent" in await grpc_send(target, "1.0", channel=channel)
        bare = grpc.ssl_channel_credentials(files["ca"])
        async with grpc.aio.secure_channel(target, bare) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await grpc_send(target, "1.0", channel=channel)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert len(agent.headers) == 2  # the two calls with the known certificate


async def test_an_https_agent_is_reached_with_the_ca_bundle_and_fails_closed_without(
        make_gateway: MakeGateway, pki: dict[str, str]) -> None:
    async with RecordingAgent().running(tls=server_tls(pki)) as agent:
        gw = await make_gateway({
            "trusted": {"backend": {"url": agent.url, "version": "0.3"},
                        "auth": {"backend_tls": {"ca_file": pki["ca"]}}},
            "untrusted": {"backend": {"url": agent.url, "version": "0.3"}},
        })
        async with aiohttp.ClientSession() as http:
            status, _, reply = await post(http, gw + "/trusted", rpc_send())
            assert status == 200 and "from agent" in str(reply)
            status, _, reply = await post(http, gw + "/untrusted", rpc_send())
            assert reply["error"]["code"] == -32603 and "unavailable" in \
                reply["error"]["message"].lower()
    assert len(agent.headers) == 1


class _TlsGrpcAgent:
    """A v1.0 gRPC agent on a TLS port, answering SendMessage with a fixed reply."""

    def __init__(self, pki: dict[str, str]) -> None:
        self.pki = pki
        self.calls = 0
        self.target = ""

    async def _send(self, raw: bytes, context: Any) -> bytes:
        self.calls += 1
        reply = pb.Message(message_id="r", role=pb.ROLE_AGENT, parts=[pb.Part(text="tls ok")])
        return pb.SendMessageResponse(message=reply).SerializeToString()

    async def __aenter__(self) -> _TlsGrpcAgent:
        handler = grpc.method_handlers_generic_handler("lf.a2a.v1.A2AService", {
            "SendMessage": grpc.unary_unary_rpc_method_handler(self._send)})
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((handler,))
        pair = (Path(self.pki["key"]).read_bytes(), Path(self.pki["cert"]).read_bytes())
        port = self.server.add_secure_port("127.0.0.1:0",
                                           grpc.ssl_server_credentials([pair]))
        self.target = f"127.0.0.1:{port}"
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop(None)


@pytest.fixture
async def tls_grpc_agent(pki: dict[str, str]) -> AsyncIterator[_TlsGrpcAgent]:
    async with _TlsGrpcAgent(pki) as agent:
        yield agent


async def test_a_tls_grpc_agent_is_reached_with_the_ca_bundle_and_fails_closed_without(
        make_gateway: MakeGateway, pki: dict[str, str],
        tls_grpc_agent: _TlsGrpcAgent) -> None:
    backend = {"url": tls_grpc_agent.target, "version": "1.0", "binding": "GRPC",
               "timeout": 3, "connect_timeout": 1}
    gw = await make_gateway({
        "trusted": {"backend": backend, "auth": {"backend_tls": {
            "ca_file": pki["ca"], "grpc": True, "server_name": "localhost"}}},
        "system_cas": {"backend": backend, "auth": {"backend_tls": {"grpc": True}}},
        "plaintext": {"backend": backend},
    })
    async with aiohttp.ClientSession() as http:
        status, _, reply = await post(http, gw + "/trusted", rpc_send())
        assert status == 200 and "tls ok" in str(reply), reply
        for tenant in ("system_cas", "plaintext"):
            status, _, reply = await post(http, f"{gw}/{tenant}", rpc_send())
            assert "error" in reply and reply["error"]["code"] == -32603, (tenant, reply)
    assert tls_grpc_agent.calls == 1
