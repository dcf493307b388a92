"""`doctor --config`: every tenant's backend, and exit 1 when one cannot be served;
`--through-gateway`: the same probes through a running gateway, per tenant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.config.models import parse_config
from gateway.doctor.runner import Options, doctor, silent
from tests.doctor.doctor_support import cli, http, schema
from tests.doctor.schema_check import errors
from tests.support.helpers import MakeGateway, free_port, v03, write_config
from tests.support.interop_support import Agent

pytestmark = pytest.mark.interop


async def test_config_exit_code_for_an_unservable_tenant(sdk_agents: dict[str, Agent],
                                                         tmp_path: Path) -> None:
    agent = sdk_agents["1.0"]
    config = write_config(tmp_path / "gateway.yaml", {
        "listen": {"http": f"127.0.0.1:{free_port()}"},
        "tenants": {
            "good": {"backend": {"card": f"{http(agent.jsonrpc)}/.well-known/agent-card.json",
                                 "discovery": {"bindings": ["GRPC"]}}},
            "gone": {"backend": {"url": f"http://127.0.0.1:{free_port()}/", "version": "1.0"}},
        },
        "loss_policy": "reject",
    })
    code, out = await cli("doctor", "--config", str(config), "--json", "--quiet")
    assert code == 1
    doc = json.loads(out)
    assert errors(doc, schema()) == []
    assert doc["loss_policy"] == "reject"
    good, gone = doc["targets"]
    assert good["name"] == "good" and good["servable"] is True
    assert good["gateway_uses"].startswith("GRPC 1.0 at 127.0.0.1:")  # discovery's choice
    v03_rpc = next(c for c in good["clients"] if (c["binding"], c["version"]) ==
                   ("JSONRPC", "0.3"))
    # Under loss_policy reject, a v0.3 GetTask with metadata is refused.
    assert {"operation": "GetTask", "fields": ["params.metadata"],
            "effect": "rejected"} in v03_rpc["lost"]
    assert v03_rpc["verdict"] == "bridged, partly"
    assert gone["servable"] is False
    assert gone["interfaces"][0]["agreement"] == "unreachable"
    assert {c["verdict"] for c in gone["clients"]} == {"refused"}

    only_good = write_config(tmp_path / "good.yaml", {
        "tenants": {"good": {"backend": {"url": http(agent.jsonrpc) + "/",
                                         "version": "1.0"}}}})
    code, out = await cli("doctor", "--config", str(only_good), "--quiet")
    assert code == 0
    assert "servable: yes" in out and "operations at" in out


async def test_through_gateway(sdk_agents: dict[str, Agent], make_gateway: MakeGateway) -> None:
    tenants = {"a03": v03(http(sdk_agents["0.3"].jsonrpc) + "/")}
    gateway = await make_gateway(tenants)
    config = parse_config({"tenants": tenants})
    report = await doctor(None, Options(progress=silent), config, through_gateway=gateway)
    (t,) = report.targets
    assert report.through_gateway == gateway and t.name == "a03"
    assert t.card.found and t.card.shape == "union"
    # The gateway's own interfaces, both versions, each answering as advertised.
    assert sorted((i.advertised_binding, i.advertised_version, i.agreement)
                  for i in t.interfaces) == [
        ("HTTP+JSON", "0.3", "as advertised"), ("HTTP+JSON", "1.0", "as advertised"),
        ("JSONRPC", "0.3", "as advertised"), ("JSONRPC", "1.0", "as advertised")]
    assert t.servable and report.ok
    v10 = next(i for i in t.interfaces if i.advertised_binding == "JSONRPC"
               and i.advertised_version == "1.0")
    ops = {o.operation: o for o in v10.operations}
    assert ops["GetTask"].status == "works"
    # ListTasks toward the v0.3 backend: the gateway answers it from its task index.
    assert ops["ListTasks"].status == "works" and ops["ListTasks"].detail == "listed one page"
    seeds = {s.id: s for s in t.seeds}
    assert seeds["I2"].result == "pass"
