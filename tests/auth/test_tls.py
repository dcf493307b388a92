"""TLS contexts built from config, proven by real handshakes on loopback: server TLS,
mTLS with and without a client certificate (and one from another CA), the principal read
from the verified certificate, rotated files picked up, and the gRPC credentials."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from aiohttp import web

from gateway.auth.mtls import cert_principal
from gateway.auth.peer import grpc_peer_cert, http_peer_cert
from gateway.config.auth import MtlsConfig
from gateway.config.tls import ClientTlsConfig, ServerTlsConfig
from gateway.tls.context import (
    ReloadingServerContext,
    client_context,
    grpc_channel_credentials,
    grpc_channel_options,
    grpc_server_credentials,
    server_context,
)
from tests.support.auth_pki import Issued, issue, make_ca

CA, OTHER_CA = make_ca("gateway test CA"), make_ca("another CA")
SERVER = issue(CA, "server-1", server=True)
CLIENT = issue(CA, "billing-agent", dns=("billing.agents.internal",))
STRANGER = issue(OTHER_CA, "stranger")


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    (tmp_path / "ca.pem").write_bytes(CA.cert_pem)
    files["ca"] = str(tmp_path / "ca.pem")
    files["server_cert"], files["server_key"] = SERVER.write(tmp_path, "server")
    files["client_cert"], files["client_key"] = CLIENT.write(tmp_path, "client")
    files["stranger_cert"], files["stranger_key"] = STRANGER.write(tmp_path, "stranger")
    return files


async def serve(ctx: ssl.SSLContext, port: int) -> Callable[[], Any]:
    async def hello(request: web.Request) -> web.Response:
        principal = cert_principal(MtlsConfig(), http_peer_cert(request.transport))
        return web.Response(text=f"hello {principal.name if principal else 'anonymous'}")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx).start()
    return runner.cleanup


async def get(port: int, tls: ClientTlsConfig | None) -> str:
    connector = aiohttp.TCPConnector(ssl=client_context(tls))
    async with aiohttp.ClientSession(connector=connector) as session, \
            session.get(f"https://localhost:{port}/") as resp:
        return await resp.text()


@pytest.fixture
async def mtls_server(pki: dict[str, str], unused_tcp_port: int) -> AsyncIterator[int]:
    ctx = server_context(ServerTlsConfig(cert_file=pki["server_cert"],
                                         key_file=pki["server_key"],
                                         client_ca_file=pki["ca"]))
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    stop = await serve(ctx, unused_tcp_port)
    yield unused_tcp_port
    await stop()


async def test_mtls_handshake_with_and_without_a_client_cert(
        mtls_server: int, pki: dict[str, str]) -> None:
    with_cert = ClientTlsConfig(ca_file=pki["ca"], cert_file=pki["client_cert"],
                                key_file=pki["client_key"])
    assert await get(mtls_server, with_cert) == "hello billing-agent"
    for refused in (ClientTlsConfig(ca_file=pki["ca"]),
                    ClientTlsConfig(ca_file=pki["ca"], cert_file=pki["stranger_cert"],
                                    key_file=pki["stranger_key"])):
        with pytest.raises(aiohttp.ClientError):
            await get(mtls_server, refused)


async def test_client_fails_closed_without_the_ca(mtls_server: int) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await get(mtls_server, None)  # the system CAs do not know the test CA


async def test_plain_tls_and_optional_client_certs(pki: dict[str, str],
                                                   unused_tcp_port: int) -> None:
    ctx = server_context(ServerTlsConfig(cert_file=pki["server_cert"],
                                         key_file=pki["server_key"],
                                         client_ca_file=pki["ca"], client_auth="optional"))
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    stop = await serve(ctx, unused_tcp_port)
    try:
        assert await get(unused_tcp_port, ClientTlsConfig(ca_file=pki["ca"])) \
            == "hello anonymous"
        assert await get(unused_tcp_port, ClientTlsConfig(
            ca_file=pki["ca"], cert_file=pki["client_cert"], key_file=pki["client_key"])) \
            == "hello billing-agent"
    finally:
        await stop()


async def peer_cn(port: int, ca: str) -> str:
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_context(ClientTlsConfig(ca_file=ca)),
        server_hostname="localhost")
    cert = writer.get_extra_info("peercert")
    writer.close()
    return str(dict(x[0] for x in cert["subject"])["commonName"])


async def test_rotated_files_are_used_by_new_handshakes(pki: dict[str, str], tmp_path: Path,
                                                        unused_tcp_port: int) -> None:
    reloading = ReloadingServerContext(ServerTlsConfig(
        cert_file=pki["server_cert"], key_file=pki["server_key"]))
    assert not reloading.maybe_reload()
    stop = await serve(reloading.context, unused_tcp_port)
    try:
        assert await peer_cn(unused_tcp_port, pki["ca"]) == "server-1"
        rotated: Issued = issue(CA, "server-2", server=True)
        Path(pki["server_key"]).write_bytes(b"half-written")  # a rotation in progress
        later = os.stat(pki["server_cert"]).st_mtime + 5
        os.utime(pki["server_key"], (later, later))
        assert not reloading.maybe_reload()  # refused, the old pair kept
        assert await peer_cn(unused_tcp_port, pki["ca"]) == "server-1"
        rotated.write(tmp_path, "server")
        for name in ("server_cert", "server_key"):
            os.utime(pki[name], (later + 1, later + 1))
        assert reloading.maybe_reload() and reloading.reloads == 1
        assert await peer_cn(unused_tcp_port, pki["ca"]) == "server-2"
    finally:
        await stop()


def _echo() -> grpc.GenericRpcHandler:
    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        principal = cert_principal(MtlsConfig(principal_from="san_dns"),
                                   grpc_peer_cert(context.auth_context()))
        return request + b" " + (principal.name if principal else "anonymous").encode()

    return grpc.method_handlers_generic_handler(
        "test.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})


async def test_grpc_credentials_from_the_same_config(pki: dict[str, str],
                                                     unused_tcp_port: int) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_echo(),))
    creds = grpc_server_credentials(ServerTlsConfig(
        cert_file=pki["server_cert"], key_file=pki["server_key"], client_ca_file=pki["ca"]))
    server.add_secure_port(f"127.0.0.1:{unused_tcp_port}", creds)
    await server.start()
    try:
        async def call(tls: ClientTlsConfig) -> bytes:
            async with grpc.aio.secure_channel(
                    f"127.0.0.1:{unused_tcp_port}", grpc_channel_credentials(tls),
                    options=grpc_channel_options(tls)) as channel:
                method = channel.unary_unary("/test.Echo/Echo")
                return bytes(await method(b"hi", timeout=5))

        ok = ClientTlsConfig(ca_file=pki["ca"], cert_file=pki["client_cert"],
                             key_file=pki["client_key"], server_name="localhost")
        assert await call(ok) == b"hi billing.agents.internal"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(ClientTlsConfig(ca_file=pki["ca"], server_name="localhost"))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop(None)
