"""A card that lies: it claims a v1.0 JSON-RPC interface whose endpoint answers as the
a2a-sdk 0.3.26 agent does (it forwards to it), and an HTTP+JSON interface at a port
where nothing listens. Doctor says so, the gateway could not serve it, and the CLI's
exit code and `--json` output (checked against report.schema.json) say the same."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from gateway.doctor.runner import Options, doctor, silent
from tests.doctor.doctor_support import cli, http, schema
from tests.doctor.schema_check import errors
from tests.support.helpers import free_port
from tests.support.interop_support import Agent

pytestmark = pytest.mark.interop


@pytest.fixture
async def liar(sdk_agents: dict[str, Agent]) -> AsyncIterator[str]:
    backend = http(sdk_agents["0.3"].jsonrpc) + "/"
    port, dead = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    card = {"name": "liar", "description": "claims v1.0", "version": "1",
            "supportedInterfaces": [
                {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": f"http://127.0.0.1:{dead}", "protocolBinding": "HTTP+JSON",
                 "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}

    async def serve_card(_: web.Request) -> web.Response:
        return web.json_response(card)

    async def forward(request: web.Request) -> web.Response:
        async with aiohttp.ClientSession() as session, session.post(
                backend, data=await request.read(),
                headers={"content-type": "application/json"}) as resp:
            return web.Response(body=await resp.read(), status=resp.status,
                                content_type="application/json")

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", serve_card)
    app.router.add_post("/", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield base
    await runner.cleanup()


async def test_card_that_lies(liar: str) -> None:
    report = await doctor(liar, Options(progress=silent))
    (t,) = report.targets
    first, second = t.interfaces
    assert (first.advertised_binding, first.advertised_version) == ("JSONRPC", "1.0")
    assert first.reachable and first.answered == ["JSONRPC 0.3"]
    assert first.agreement == "differs"
    assert "the card says JSONRPC 1.0; JSONRPC 0.3 answered" in first.note
    # The operations are those of the dialect that really answered.
    ops = {o.operation: o.status for o in first.operations}
    assert ops["GetTask"] == "works" and ops["ListTasks"] == "n/a"
    assert not second.reachable and second.agreement == "unreachable"
    assert {o.status for o in second.operations} == {"skipped"}
    # The gateway would call the v1.0 JSON-RPC entry, which does not speak v1.0.
    assert t.gateway_uses.startswith("JSONRPC 1.0 at ")
    assert not t.servable and not report.ok
    assert {c.verdict for c in t.clients} == {"refused"}
    assert any("does not answer as JSONRPC 1.0" in p for p in t.problems)
    assert any("nothing answers" in p for p in t.problems)
    # What would work instead: configure the tenant by url at the dialect that answered.
    assert any(p.startswith(f"JSONRPC 0.3 answers at {liar}/") and "version '0.3'" in p
               for p in t.problems)


async def test_json_output_and_exit_code(liar: str) -> None:
    code, out = await cli("doctor", liar + "/.well-known/agent-card.json", "--json", "--quiet")
    assert code == 1
    doc = json.loads(out)
    assert errors(doc, schema()) == []
    assert doc["ok"] is False and doc["schema"] == "a2a-gateway-doctor/1"
    assert doc["targets"][0]["interfaces"][0]["answered"] == ["JSONRPC 0.3"]


async def test_schema_check_catches_mistakes() -> None:
    bad = {"schema": "a2a-gateway-doctor/1", "ok": "yes", "targets": [{"name": 1}]}
    found = errors(bad, schema())
    assert any("$.ok: expected boolean" in e for e in found)
    assert any("missing loss_policy" in e for e in found)
    assert any("$.targets[0].name: expected string" in e for e in found)
