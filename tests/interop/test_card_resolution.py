"""Both official SDK clients know only the gateway's URL: they resolve its agent card with
their own resolver, pick an interface for each binding, and complete a send (issue 5)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.support.helpers import PEERS, SDK_PYTHON
from tests.support.interop_support import Deployment


def resolve_and_send(version: str, base: str, transport: str) -> dict[str, Any]:
    script = PEERS / ("resolve_v03.py" if version == "0.3" else "resolve_v10.py")
    proc = subprocess.run([str(SDK_PYTHON[version]), str(script), "--base", base,
                           "--transport", transport], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON", "GRPC"])
@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_sdk_client_resolves_the_gateway_card_and_sends(deployment: Deployment, version: str,
                                                        transport: str) -> None:
    base = f"http://127.0.0.1:{deployment.gateway_http}"
    got = resolve_and_send(version, base, transport)
    assert "error" not in got, got
    assert got["reply"] == "echo: hello"  # the default tenant's agent answered
    assert got["name"] == "interop-peer-v03"  # the default tenant's card, rewritten
    text = json.dumps(got)
    for agent in deployment.agents.values():  # only the gateway's addresses are listed
        for port in (agent.jsonrpc, agent.rest, agent.grpc):
            assert f":{port}" not in text


@pytest.mark.parametrize("version", ["0.3", "1.0"])
@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
def test_per_tenant_card(deployment: Deployment, version: str, transport: str) -> None:
    got = resolve_and_send(version, deployment.url("r10"), transport)
    assert "error" not in got, got
    assert got["name"] == "interop-peer-v10" and got["reply"] == "echo: hello"
