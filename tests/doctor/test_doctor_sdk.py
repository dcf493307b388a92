"""`a2a-gateway doctor` against the official SDK agents: a2a-sdk 0.3.26 and 1.3.0, real
processes, every binding they serve (JSON-RPC, HTTP+JSON, gRPC)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.models import parse_config
from gateway.doctor.report import OperationResult, Report, TargetReport
from gateway.doctor.runner import Options, doctor, silent
from tests.doctor.doctor_support import http
from tests.support.interop_support import Agent

pytestmark = pytest.mark.interop

ALL_OPS = ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
           "SubscribeToTask", "CreateTaskPushNotificationConfig",
           "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
           "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"]


async def run(target: str, send: str | None = None) -> TargetReport:
    report: Report = await doctor(target, Options(send=send, progress=silent))
    assert len(report.targets) == 1
    return report.targets[0]


def ops_of(t: TargetReport, binding: str) -> dict[str, OperationResult]:
    (iface,) = [i for i in t.interfaces if i.advertised_binding == binding]
    assert [o.operation for o in iface.operations] == ALL_OPS
    return {o.operation: o for o in iface.operations}


def status(t: TargetReport, binding: str) -> dict[str, str]:
    return {name: r.status for name, r in ops_of(t, binding).items()}


def seeds(t: TargetReport) -> dict[str, Any]:
    assert [s.id for s in t.seeds] == [f"I{i}" for i in range(1, 15)]
    return {s.id: s for s in t.seeds}


def verdicts(t: TargetReport) -> dict[str, Any]:
    return {f"{c.binding} {c.version}": c for c in t.clients}


async def test_v03_agent_safe_probes(sdk_agents: dict[str, Agent]) -> None:
    agent = sdk_agents["0.3"]
    t = await run(http(agent.jsonrpc))  # a base URL: the well-known card below it
    assert t.card.found and t.card.shape == "0.3" and t.card.protocol_version == "0.3.0"
    assert [(i.advertised_binding, i.advertised_version, i.answered, i.agreement)
            for i in t.interfaces] == [
        ("JSONRPC", "0.3", ["JSONRPC 0.3"], "as advertised"),
        ("HTTP+JSON", "0.3", ["HTTP+JSON 0.3"], "as advertised"),
        ("GRPC", "0.3", ["GRPC 0.3"], "as advertised")]
    works, err, skip, na = "works", "error", "skipped", "n/a"
    safe = {"SendMessage": skip, "SendStreamingMessage": skip, "GetTask": works,
            "ListTasks": na, "CancelTask": works, "CreateTaskPushNotificationConfig": skip,
            "GetTaskPushNotificationConfig": works, "GetExtendedAgentCard": works}
    assert status(t, "JSONRPC") == {**safe, "SubscribeToTask": works,
                                    "ListTaskPushNotificationConfigs": works,
                                    "DeleteTaskPushNotificationConfig": works}
    # a2a-sdk 0.3.26's REST and gRPC servers lack push-config list and delete; its REST
    # subscribe to an unknown task breaks off mid-answer.
    rest = ops_of(t, "HTTP+JSON")
    assert {k: v.status for k, v in rest.items()} == {
        **safe, "SubscribeToTask": err, "ListTaskPushNotificationConfigs": err,
        "DeleteTaskPushNotificationConfig": err}
    assert rest["SubscribeToTask"].error and rest["SubscribeToTask"].error.name == "BrokenAnswer"
    lst, dele = rest["ListTaskPushNotificationConfigs"], rest["DeleteTaskPushNotificationConfig"]
    assert lst.error and (lst.error.name, lst.error.wire_code) == ("InternalError", "HTTP 500")
    assert dele.error and (dele.error.name, dele.error.wire_code) == ("NoA2AAnswer", "HTTP 405")
    grpc_ops = ops_of(t, "GRPC")
    assert {k: v.status for k, v in grpc_ops.items()} == {
        **safe, "SubscribeToTask": works, "ListTaskPushNotificationConfigs": err,
        "DeleteTaskPushNotificationConfig": err}
    for name in ("ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"):
        error = grpc_ops[name].error
        assert error and error.wire_code == "UNIMPLEMENTED" and error.shape == "none"
    assert rest["GetTask"].error and rest["GetTask"].error.shape == "HTTP+JSON 0.3"
    assert grpc_ops["GetTask"].error and grpc_ops["GetTask"].error.shape == "GRPC 0.3"

    # The gateway discovers the JSON-RPC interface; v1.0 clients keep ListTasks (the
    # gateway answers it from its task index).
    assert t.servable and t.gateway_uses.startswith("JSONRPC 0.3 at ")
    v = verdicts(t)
    for name in ("JSONRPC 1.0", "HTTP+JSON 1.0", "GRPC 1.0"):
        assert v[name].verdict == "bridged" and not v[name].refused
        assert [(x.operation, x.fields) for x in v[name].lost] == [
            ("ListTaskPushNotificationConfigs", ["params.pageSize"])]
    for name in ("JSONRPC 0.3", "HTTP+JSON 0.3", "GRPC 0.3"):
        assert v[name].verdict == "bridged" and not v[name].refused
    # Same dialect on both sides: GetTask is forwarded as it came (the pipeline's fast
    # path), so its v0.3 metadata survives; a subscription is translated and loses it.
    lost = {x.operation for x in v["JSONRPC 0.3"].lost}
    assert "SubscribeToTask" in lost and "GetTask" not in lost
    assert {x.effect for c in t.clients for x in c.lost} == {"reported", "reported, in the answer"}
    # A v0.3 JSON-RPC backend's answers carry referenceTaskIds; v0.3 REST clients cannot.
    assert [x.operation for x in v["HTTP+JSON 0.3"].lost] == ["SendMessage", "GetTask"]

    s = seeds(t)
    assert s["I2"].result == "pass" and "no ErrorInfo (v0.3 form" in s["I2"].why
    for seed in ("I1", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10", "I11", "I12", "I14"):
        assert s[seed].result == "n.a.", seed
    assert s["I13"].result == "pass"


async def test_v03_agent_with_send(sdk_agents: dict[str, Agent]) -> None:
    agent = sdk_agents["0.3"]
    t = await run(f"{http(agent.jsonrpc)}/.well-known/agent-card.json", send="task: doctor")
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        ops = ops_of(t, binding)
        assert ops["SendMessage"].detail == "answered a task TASK_STATE_COMPLETED"
        assert ops["SendStreamingMessage"].status == "works"
        assert ops["GetTask"].detail == "the task sent"
        assert ops["CreateTaskPushNotificationConfig"].status == "works"
        assert ops["GetTaskPushNotificationConfig"].status == "works"
        # The task is done: cancel answers TaskNotCancelable, which is an answer.
        assert ops["CancelTask"].status == "works"
        assert ops["CancelTask"].error and \
            ops["CancelTask"].error.name == "TaskNotCancelableError"
    assert ops_of(t, "HTTP+JSON")["ListTaskPushNotificationConfigs"].status == "error"
    assert ops_of(t, "GRPC")["DeleteTaskPushNotificationConfig"].status == "error"
    assert ops_of(t, "JSONRPC")["DeleteTaskPushNotificationConfig"].status == "works"
    s = seeds(t)
    assert s["I1"].result == "pass" and s["I11"].result == "pass"


async def test_v10_agent_over_grpc_target(sdk_agents: dict[str, Agent]) -> None:
    agent = sdk_agents["1.0"]
    t = await run(f"127.0.0.1:{agent.grpc}", send="task: doctor")  # host:port: gRPC card
    assert t.card.found and t.card.shape == "grpc 1.0"
    assert t.card.capabilities == {"streaming": True, "pushNotifications": True,
                                   "extendedAgentCard": True}
    assert [(i.advertised_binding, i.answered, i.agreement) for i in t.interfaces] == [
        ("JSONRPC", ["JSONRPC 1.0"], "as advertised"),
        ("HTTP+JSON", ["HTTP+JSON 1.0"], "as advertised"),
        ("GRPC", ["GRPC 1.0"], "as advertised")]
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        assert set(status(t, binding).values()) == {"works"}, binding
        ops = ops_of(t, binding)
        assert ops["ListTasks"].detail == "listed one page"
        assert ops["DeleteTaskPushNotificationConfig"].detail == "deleted"
    assert t.servable and t.gateway_uses.startswith("JSONRPC 1.0 at ")
    v = verdicts(t)
    assert {name: c.verdict for name, c in v.items()} == dict.fromkeys(v, "bridged")
    assert not v["GRPC 1.0"].lost
    assert {x.operation for x in v["JSONRPC 0.3"].lost} >= {"GetTask"}
    # v1.0 answers carry referenceTaskIds, which the v0.3 proto (REST, gRPC) cannot hold.
    for name in ("HTTP+JSON 0.3", "GRPC 0.3"):
        answer = [x for x in v[name].lost if x.effect == "reported, in the answer"]
        assert [x.operation for x in answer] == ["SendMessage", "GetTask"]
        assert "status.message.referenceTaskIds" in answer[1].fields
    assert not [x for x in v["JSONRPC 0.3"].lost if x.effect == "reported, in the answer"]
    s = seeds(t)
    assert s["I1"].result == "pass" and s["I2"].result == "pass"
    # a2a-sdk 1.3.0 refuses a missing A2A-Version on JSON-RPC and REST, not on gRPC.
    assert s["I3"].result == "differs"
    assert "GRPC 1.0" in s["I3"].why and "JSONRPC" not in s["I3"].why
    assert s["I4"].result == "differs" and "9.9" in s["I4"].why
    assert s["I5"].result == "pass" and s["I6"].result == "pass"
    assert s["I11"].result == "pass" and s["I12"].result == "pass"
    assert s["I13"].result == "pass"
    assert s["I7"].result == s["I8"].result == "n.a."


async def test_configured_rest_backend_lists_what_fails_there(
        sdk_agents: dict[str, Agent]) -> None:
    """A tenant configured on the 0.3.26 REST interface: the gateway bridges every client,
    and says which operations the backend itself will refuse."""
    agent = sdk_agents["0.3"]
    config = parse_config({"tenants": {"r03": {"backend": {
        "url": http(agent.rest), "version": "0.3", "binding": "HTTP+JSON"}}}})
    report = await doctor(None, Options(progress=silent), config)
    (t,) = report.targets
    assert t.name == "r03" and t.servable
    assert t.gateway_uses == f"HTTP+JSON 0.3 at {http(agent.rest)} (configured)"
    v = verdicts(t)
    for name in ("JSONRPC 0.3", "GRPC 1.0"):
        assert v[name].verdict == "bridged, partly"
        assert [f.operation for f in v[name].failing] == [
            "SubscribeToTask", "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig"]
    # Toward v0.3 REST (the v0.3 proto): a v1.0 message's referenceTaskIds cannot travel.
    send = next(x for x in v["JSONRPC 1.0"].lost if x.operation == "SendMessage")
    assert send.fields == ["message.referenceTaskIds"] and send.effect == "reported"
