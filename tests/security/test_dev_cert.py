"""`a2a-gateway dev-cert`: the files compose mounts, kept across restarts, and good enough
for a gateway listener that a client verifying against ca.crt accepts."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import aiohttp

from gateway.cli import main
from tests.support.helpers import MakeGateway


async def test_dev_cert_serves_tls_and_is_kept(make_gateway: MakeGateway, demo_agent: str,
                                               tmp_path: Path) -> None:
    assert main(["dev-cert", "--dir", str(tmp_path), "--host", "127.0.0.1"]) == 0
    made = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(made) == {"ca.crt", "tls.crt", "tls.key"}
    assert stat.S_IMODE((tmp_path / "tls.key").stat().st_mode) == 0o600
    assert main(["dev-cert", "--dir", str(tmp_path)]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == made  # kept
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"}}},
                            auth={"server_tls": {"cert_file": str(tmp_path / "tls.crt"),
                                                 "key_file": str(tmp_path / "tls.key")}})
    trust = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    async with aiohttp.ClientSession() as http, http.get(
            gw.replace("http://", "https://") + "/healthz", ssl=trust) as resp:
        assert resp.status == 200
