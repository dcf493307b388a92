"""`server_tls.client_auth: optional` on both listeners, with real certificates and real
clients. HTTPS asks for a certificate and takes one from the CA as the principal, refuses
one from another CA and lets a caller without one use its API key. gRPC's server cannot ask
without requiring (grpcio), so by default it requires one: a certificate from the CA names
the principal, any other or none is refused at the handshake; `grpc_client_auth: none`
serves gRPC clients without one (and does not read certificates there)."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from gateway.config.tls import ServerTlsConfig
from tests.security.security_support import PKI, RecordingAgent, grpc_send, keys, rpc_send
from tests.support.helpers import MakeGateway, free_port
from tests.support.waiting import wait_until

KEY = "key-of-alice-0123456789"


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    return PKI.write(tmp_path)


async def _gateway(make_gateway: MakeGateway, pki: dict[str, str], agent: RecordingAgent,
                   **tls: Any) -> tuple[str, str]:
    grpc_port = free_port()
    gw = await make_gateway(
        {"t": {"backend": {"url": agent.url, "version": "0.3"}}}, grpc_port=grpc_port,
        auth={"required": True, "mtls": {"principal_from": "subject_cn"},
              "api_keys": keys(alice=KEY),
              "server_tls": {"cert_file": pki["cert"], "key_file": pki["key"],
                             "client_ca_file": pki["ca"], "client_auth": "optional",
                             **tls}})
    return gw.replace("http://", "https://"), f"127.0.0.1:{grpc_port}"


def _https(pki: dict[str, str], who: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki["ca"])
    if who is not None:
        ctx.load_cert_chain(pki[f"{who}_cert"], pki[f"{who}_key"])
    return ctx


def _grpc(pki: dict[str, str], who: str | None) -> grpc.ChannelCredentials:
    read = {k: Path(v).read_bytes() for k, v in pki.items()}
    if who is None:
        return grpc.ssl_channel_credentials(read["ca"])
    return grpc.ssl_channel_credentials(read["ca"], read[f"{who}_key"], read[f"{who}_cert"])


async def _grpc_call(target: str, creds: grpc.ChannelCredentials,
                     metadata: tuple[tuple[str, str], ...] = ()) -> bytes | grpc.StatusCode:
    async with grpc.aio.secure_channel(target, creds) as channel:
        try:
            return await grpc_send(target, "1.0", metadata, channel=channel)
        except grpc.aio.AioRpcError as refused:
            return refused.code()


def _principals(logs: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    return [(c.get("principal"), c.get("auth"), c["outcome"]) for c in logs
            if c["event"] == "call"]


async def test_optional_mtls_on_https_and_grpc(make_gateway: MakeGateway,
                                               pki: dict[str, str]) -> None:
    async with RecordingAgent().running() as agent:
        with capture_logs() as start:
            base, target = await _gateway(make_gateway, pki, agent)
        async with aiohttp.ClientSession() as http:
            with capture_logs() as logs:
                async with http.post(base + "/t", json=rpc_send(),
                                     ssl=_https(pki, "client")) as resp:
                    assert resp.status == 200 and "from agent" in await resp.text()
                async with http.post(base + "/t", json=rpc_send(), headers={
                        "X-API-Key": KEY}, ssl=_https(pki, None)) as resp:
                    assert resp.status == 200
            with pytest.raises((aiohttp.ClientError, ssl.SSLError, OSError)):
                async with http.post(base + "/t", json=rpc_send(),
                                     ssl=_https(pki, "stranger")) as resp:
                    await resp.read()
        with capture_logs() as grpc_logs:
            served = await _grpc_call(target, _grpc(pki, "client"))
            assert isinstance(served, bytes) and b"from agent" in served
            assert await _grpc_call(target, _grpc(pki, "stranger")) \
                == grpc.StatusCode.UNAVAILABLE
            assert await _grpc_call(target, _grpc(pki, None), (("x-api-key", KEY),)) \
                == grpc.StatusCode.UNAVAILABLE
    assert _principals(logs) == [("billing-agent", "mtls", "ok"), ("alice", "api_key", "ok")]
    # The certificate names the principal on gRPC too; refused handshakes make no call.
    assert _principals(grpc_logs) == [("billing-agent", "mtls", "ok")]
    assert len(agent.headers) == 3
    assert any(line["event"] == "grpc listener requires a client certificate"
               for line in start)


async def test_grpc_client_auth_none_serves_clients_without_a_certificate(
        make_gateway: MakeGateway, pki: dict[str, str]) -> None:
    async with RecordingAgent().running() as agent:
        _, target = await _gateway(make_gateway, pki, agent, grpc_client_auth="none")
        with capture_logs() as logs:
            served = await _grpc_call(target, _grpc(pki, None), (("x-api-key", KEY),))
            assert isinstance(served, bytes) and b"from agent" in served
            # Not asked for, a certificate is not sent, so it names nobody.
            assert await _grpc_call(target, _grpc(pki, "client")) \
                == grpc.StatusCode.UNAUTHENTICATED
            # A call's access line is written once its answer is out: wait for the second.
            await wait_until(lambda: len(_principals(logs)) >= 2, "the second access line",
                             interval=0.01)
    assert _principals(logs) == [("alice", "api_key", "ok"), (None, None, "UNAUTHENTICATED")]


@pytest.mark.parametrize(("client_auth", "grpc_client_auth", "ca", "required"), [
    ("required", None, True, True), ("optional", None, True, True),
    ("optional", "none", True, False), ("none", None, True, False),
    ("none", "required", True, True), ("optional", None, False, False)])
def test_the_grpc_listeners_rule(client_auth: str, grpc_client_auth: str | None, ca: bool,
                                 required: bool) -> None:
    config = ServerTlsConfig(cert_file="c", key_file="k", client_auth=client_auth,
                             grpc_client_auth=grpc_client_auth,
                             client_ca_file="ca.pem" if ca else None)
    assert config.grpc_requires_client_cert is required


def test_grpc_client_auth_required_needs_the_client_ca() -> None:
    with pytest.raises(ValidationError, match="grpc_client_auth: required needs client_ca"):
        ServerTlsConfig(cert_file="c", key_file="k", grpc_client_auth="required")
