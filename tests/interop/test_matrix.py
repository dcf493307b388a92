"""The compatibility matrix: every client dialect x every backend dialect (issue 8).

36 pairs: {JSON-RPC, HTTP+JSON, gRPC} x {v0.3, v1.0} official SDK clients (peers/client_v*.py,
`--transport`) → tenants a03/a10 (JSON-RPC), r03/r10 (REST), g03/g10 (gRPC) of the official
a2a-sdk 0.3.26 / 1.3.0 agents, 14 operations each. Each client runs its scenarios once per
session (interop_support.client_results, shared with the other interop files); the cells
below judge what came back. Where the SDK client cannot make a call (the 0.3.26 client has
no push-config list/delete) the client script sends that version's wire shape itself: the
cell says "raw". Every expected non-pass is in EXPECTED_NON_PASS with its reason; any other
failure fails its cell. `make matrix` writes the docs' table (docs/compatibility.md) from this module
(matrix_report.py); test_matrix_table_is_current keeps the committed table honest.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from tests.interop.matrix_report import (
    EXPECTED,
    NA,
    PAGE,
    PASS,
    PASSING,
    RAW,
    current_section,
    render,
)
from tests.support.interop_support import (
    Deployment,
    client_results,
    push_config_shown,
    read_hooks,
    webhook_for,
    webhook_path,
)
from tests.support.waiting import wait_until_sync
from translators.errors import BY_NAME

J, R, G = "JSONRPC", "HTTP+JSON", "GRPC"
CLIENTS = [(v, b) for b in (J, R, G) for v in ("0.3", "1.0")]
BACKENDS = {"a03": ("0.3", J), "a10": ("1.0", J), "r03": ("0.3", R), "r10": ("1.0", R),
            "g03": ("0.3", G), "g10": ("1.0", G)}
PAIRS = [(v, b, t) for v, b in CLIENTS for t in BACKENDS]
OPERATIONS = [
    ("send", "send"), ("send_task", "task + artifact"), ("stream", "stream"), ("get", "get"),
    ("list", "list"), ("cancel", "cancel"), ("subscribe", "subscribe"),
    ("push_create", "push create"), ("push_get", "push get"), ("push_list", "push list"),
    ("push_delete", "push delete"), ("push_delivery", "push delivery"),
    ("extended_card", "extended card"), ("not_found", "task not found"),
]

# ---------------------------------------------------------------- the one table of non-passes

NO_LIST_TASKS = ("v0.3 has no ListTasks (no such method in the v0.3 JSON schema or proto); "
                 "the nearest v0.3 spellings, sent raw, get MethodNotFound: `tasks/list` → "
                 "-32601, `GET /v1/tasks` → HTTP 404, `a2a.v1.A2AService/ListTasks` → "
                 "UNIMPLEMENTED")
# (client version, client binding, tenant, operation) → (what the client gets, reason);
# "*" matches anything. The outcome is an A2A error name, or NA for "does not exist".
EXPECTED_NON_PASS: dict[tuple[str, str, str, str], tuple[str, str]] = {
    ("0.3", "*", "*", "list"): (NA, NO_LIST_TASKS),
}
# Served although the backend cannot do it itself, no longer in the table above: ListTasks
# toward v0.3 agents (from the gateway's task index), and push-config list/delete toward
# the 0.3.26 agent's REST and gRPC interfaces, which lack them (the gateway uses the same
# agent's JSON-RPC interface: per-operation fallback). docs/state.md "Interface fallback".

RAW_NOTE = ("a2a-sdk 0.3.26's Client has no push-config list/delete: the client script sends "
            "them raw in the v0.3 wire shape of its binding (`tasks/pushNotificationConfig/"
            "list|delete`; `GET|DELETE /v1/tasks/{id}/pushNotificationConfigs[/{configId}]`; "
            "`a2a.v1` `List|DeleteTaskPushNotificationConfig` stubs)")
FALLBACK_NOTE = ("a2a-sdk 0.3.26's REST and gRPC servers lack push-config list/delete (REST: "
                 "list raises NotImplementedError, HTTP 500; no DELETE route, HTTP 405; gRPC: "
                 "UNIMPLEMENTED): the gateway makes the call on the same agent's JSON-RPC "
                 "interface, from its card (per-operation interface fallback)")
INDEX_NOTE = ("v0.3 has no ListTasks: the gateway answers it from its task index, i.e. the "
              "tasks that went through the gateway, each read from the agent with GetTask")
RELAY_NOTE = ("client and backend versions differ: the gateway relays the backend's webhook "
              "and the receiver got the client's version shape (v0.3: the Task with `kind`; "
              "v1.0: a StreamResponse)")


def expected_non_pass(client: str, binding: str, tenant: str, op: str) -> tuple[str, str] | None:
    for (c, b, t, o), outcome in EXPECTED_NON_PASS.items():
        if o == op and c in ("*", client) and b in ("*", binding) and t in ("*", tenant):
            return outcome
    return None


# ---------------------------------------------------------------- what each client sees


def wire_form(name: str, client: str, binding: str) -> str:
    """How an A2A error reaches this client dialect (the gateway's error table)."""
    kind = BY_NAME[name]
    if binding == J:
        return str(kind.code)
    if binding == R:
        return f"HTTP {kind.http if client == '1.0' else kind.v03_http}"
    return kind.grpc if client == "1.0" else str(kind.v03_grpc)


def assert_client_got(err: dict[str, Any], name: str, client: str, binding: str) -> None:
    kind = BY_NAME[name]
    if client == "1.0":  # the 1.3.0 SDK rebuilds typed errors on every binding
        assert err["type"] == name, err
    elif binding == J:
        assert (err["type"], err["code"]) == ("A2AClientJSONRPCError", kind.code), err
    elif binding == R:  # the 0.3.26 REST transport keeps only the HTTP status
        assert err["type"] == "A2AClientHTTPError" and str(kind.v03_http) in err["message"], err
    else:  # the gateway's v0.3 gRPC message form, which the 0.3.26 SDK splits on ": "
        assert err["type"] == "AioRpcError", err
        assert err["message"].startswith(f"{kind.v03_name or name}: "), err


def _ok(value: Any) -> Any:
    assert isinstance(value, dict | list) and not (isinstance(value, dict) and (
        "error" in value or "skipped" in value)), value
    return value


def _cfg(got: dict[str, Any], shown: dict[str, Any]) -> None:
    assert {k: v for k, v in got.items() if k != "taskId"} == shown, got
    assert got["taskId"]


# ---------------------------------------------------------------- raw probes


def probe_v03_list_tasks(deployment: Deployment, binding: str, tenant: str) -> str:
    """What a v0.3 caller gets for the ListTasks spellings the v0.3 documents mention."""
    if binding == J:
        reply = httpx.post(deployment.url(tenant), json={
            "jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}, timeout=30)
        assert reply.json()["error"]["code"] == -32601, reply.text
        return "-32601"
    if binding == R:
        reply = httpx.get(deployment.url(tenant) + "/v1/tasks", timeout=30)
        assert reply.status_code == 404 and "message" in reply.json(), reply.text
        return "HTTP 404"

    async def call() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(deployment.grpc_target()) as channel:
            method = channel.unary_unary("/a2a.v1.A2AService/ListTasks")
            try:
                await method(b"", metadata=(("x-a2a-tenant", tenant),), timeout=30)
            except grpc.aio.AioRpcError as err:
                return err.code()
        raise AssertionError("a2a.v1.A2AService/ListTasks answered")

    assert asyncio.run(call()) == grpc.StatusCode.UNIMPLEMENTED
    return "UNIMPLEMENTED"


def hook_records(deployment: Deployment, path: str) -> list[dict[str, Any]]:
    assert deployment.hooks is not None
    return read_hooks(deployment.hooks, path)


def _completes(body: dict[str, Any], task_id: str, client: str) -> bool:
    if client == "0.3":
        texts = [p.get("text") for a in body.get("artifacts", []) for p in a["parts"]]
        return body.get("id") == task_id and body["status"]["state"] == "completed" \
            and "push from hook" in texts
    task, status = body.get("task", {}), body.get("statusUpdate", {})
    return (task.get("id") == task_id and task["status"]["state"] == "TASK_STATE_COMPLETED") or (
        status.get("taskId") == task_id and
        status["status"]["state"] == "TASK_STATE_COMPLETED")


def check_delivery(deployment: Deployment, client: str, binding: str, tenant: str,
                   got: dict[str, Any]) -> None:
    """The session's receiver got the completed task, in the client's version shape."""
    assert got["second"] == "completed" and got["answer"] == "push from hook", got
    task_id = got["created"]["taskId"]
    path = webhook_path(client, tenant, binding)
    wait_until_sync(lambda: any(_completes(r["body"], task_id, client)
                                for r in hook_records(deployment, path)),
                    f"the completed task on {path}", timeout=20, interval=0.1)
    for record in hook_records(deployment, path):
        body = record["body"]
        if client == "0.3":
            assert body.get("kind") == "task", body
        else:
            assert len(body) == 1 and set(body) <= {
                "task", "message", "statusUpdate", "artifactUpdate"}, body
        headers = {k.lower(): v for k, v in record["headers"].items()}
        assert headers.get("x-a2a-notification-token") == "tok-1", headers


# ---------------------------------------------------------------- the cells


def _value(results: dict[str, Any], op: str) -> Any:
    scenario = {"send": "send_message", "get": "get_task", "list": "list_tasks",
                "push_delivery": "push_delivery"}.get(op, op)
    if op.startswith("push_") and op != "push_delivery":
        crud = results["push_crud"]
        if "error" in crud:
            return crud
        return crud[{"push_create": "created", "push_get": "got", "push_list": "listed",
                     "push_delete": "deleted"}[op]]
    return results[scenario]


def _served_over_jsonrpc(deployment: Deployment, pair: tuple[str, str, str],
                         operation: str) -> None:
    """Toward the 0.3.26 agent's REST and gRPC interfaces, the gateway's log says the
    call was served by its JSON-RPC interface (fallback); elsewhere, by the configured one."""
    client, binding, tenant = pair
    calls = deployment.cache[("calls", client, tenant, binding)]
    served = {c["backend_binding"] for c in calls if c["operation"] == operation}
    expected = "JSONRPC" if tenant in ("r03", "g03") else BACKENDS[tenant][1]
    assert served == {expected}, (operation, served)


def check_pass(deployment: Deployment, pair: tuple[str, str, str], op: str,
               results: dict[str, Any]) -> None:
    """Assert the operation worked; AssertionError says how it did not."""
    client, binding, tenant = pair
    value = _value(results, op)
    if op == "send":
        assert value == {"kind": "message", "role": "agent", "text": "echo: hello"}, value
    elif op == "send_task":
        assert _ok(value)["state"] == "completed" and value["id"] and value["contextId"], value
        assert value["artifacts"] == [{"artifactId": "result", "name": "result", "parts": [
            {"text": "built build"},
            {"fileBytesB64": "AAECYmluYXJ5", "mimeType": "application/octet-stream",
             "name": "blob.bin"},
            {"data": {"k": 1}}]}], value
    elif op == "stream":
        assert _ok(value)["reassembled"] == "chunk 0chunk 1chunk 2", value
        assert value["finalState"] == "completed" and value["events"][0]["type"] == "task"
        statuses = [e for e in value["events"] if e["type"] == "status"]
        if client == "0.3":
            assert [s["final"] for s in statuses][-1] is True, statuses
    elif op == "get":
        assert _ok(value)["state"] == "completed", value
        assert value["historyTexts"][0] == "task: g" and value["artifactTexts"] == ["built g"]
    elif op == "list":
        assert _ok(value) == {"sameTasks": True, "states": ["completed", "completed"]}, value
    elif op == "cancel":
        assert _ok(value)["afterSend"] in ("submitted", "working"), value
        assert (value["afterCancel"], value["afterGet"]) == ("canceled", "canceled"), value
    elif op == "subscribe":
        assert (_ok(value)["firstType"], value["finalState"]) == ("task", "completed"), value
        assert value["lastChunk"] is True, value
        if client == "0.3":
            assert value["finalFlags"][-1] is True, value
    elif op in ("push_create", "push_get"):
        _cfg(_ok(value), push_config_shown(webhook_for(deployment, client, tenant, binding),
                                           client, tenant, created=op == "push_create"))
    elif op == "push_list":
        assert [c["id"] for c in _ok(value)] == ["cfg1"], value
        _served_over_jsonrpc(deployment, pair, "ListTaskPushNotificationConfigs")
        _cfg(value[0], push_config_shown(webhook_for(deployment, client, tenant, binding),
                                         client, tenant))
    elif op == "push_delete":
        assert value is None, value
        _served_over_jsonrpc(deployment, pair, "DeleteTaskPushNotificationConfig")
        assert results["push_crud"]["listedAfterDelete"] == [], results["push_crud"]
    elif op == "push_delivery":
        check_delivery(deployment, client, binding, tenant, _ok(value))
    elif op == "extended_card":
        assert "secret-skill" in _ok(value)["skills"], value
        assert value["name"] == f"interop-peer-v{tenant[1:]}", value  # the tenant's agent
    elif op == "not_found":
        assert_client_got(value["error"], "TaskNotFoundError", client, binding)


def judge(deployment: Deployment, pair: tuple[str, str, str], op: str,
          results: dict[str, Any]) -> dict[str, Any]:
    """One cell: status (pass/raw/expected/n/a/fail), short text, footnote, problem."""
    client, binding, tenant = pair
    raw = client == "0.3" and op in ("push_list", "push_delete")
    expected = expected_non_pass(client, binding, tenant, op)
    try:
        if raw:
            via = results["push_crud"].get("via")
            assert via == {"list": "raw", "delete": "raw"}, results["push_crud"]
        if expected is None:
            check_pass(deployment, pair, op, results)
        elif expected[0] == NA:
            assert "skipped" in _value(results, op), _value(results, op)
            probe = probe_v03_list_tasks(deployment, binding, tenant)
            return {"status": NA, "text": f"n/a ({probe})", "note": expected[1],
                    "problem": None}
        else:
            value = _value(results, op)
            assert isinstance(value, dict) and "error" in value, (
                f"expected {expected[0]}, got {value!r}: if it works now, remove the entry "
                f"from EXPECTED_NON_PASS")
            assert_client_got(value["error"], expected[0], client, binding)
            form = wire_form(expected[0], client, binding)
            text = f"{expected[0].removesuffix('Error')} ({form})"
            return {"status": EXPECTED, "text": text + (" raw" if raw else ""),
                    "note": expected[1], "problem": None}
    except AssertionError as exc:
        return {"status": "fail", "text": "unexpected", "note": None, "problem": str(exc)}
    notes = [RAW_NOTE] if raw else []
    if tenant in ("r03", "g03") and op in ("push_list", "push_delete"):
        notes.append(FALLBACK_NOTE)
    if op == "list" and BACKENDS[tenant][0] == "0.3":
        notes.append(INDEX_NOTE)
    if op == "push_delivery" and client != BACKENDS[tenant][0]:
        notes.append(RELAY_NOTE)
    return {"status": RAW if raw else PASS, "text": "", "note": notes, "problem": None}


def _fold(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def pair_report(deployment: Deployment, pair: tuple[str, str, str]) -> dict[str, Any]:
    """The pair's cells and lossy fields, computed once per session."""
    key = ("matrix", *pair)
    if key not in deployment.cache:
        client, binding, tenant = pair
        results = client_results(deployment, client, tenant, binding)
        calls = deployment.cache[("calls", client, tenant, binding)]
        dropped = sorted({f"{c['operation']}: {_fold(f)}" for c in calls
                          for f in c.get("dropped", [])})
        deployment.cache[key] = {
            "client": client, "binding": binding, "tenant": tenant,
            "backendVersion": BACKENDS[tenant][0], "backendBinding": BACKENDS[tenant][1],
            "cells": {op: judge(deployment, pair, op, results) for op, _ in OPERATIONS},
            "dropped": dropped, "tenants": sorted({c["tenant"] for c in calls}),
        }
    return deployment.cache[key]  # type: ignore[no-any-return]


def _id(pair: tuple[str, str, str]) -> str:
    return "-".join(pair)


@pytest.mark.parametrize("op", [op for op, _ in OPERATIONS])
@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_cell(deployment: Deployment, pair: tuple[str, str, str], op: str) -> None:
    cell = pair_report(deployment, pair)["cells"][op]
    assert cell["status"] != "fail", f"{_id(pair)} {op}: {cell['problem']}"


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_every_call_reached_the_pairs_tenant(deployment: Deployment,
                                             pair: tuple[str, str, str]) -> None:
    """The gateway's log: each of the client's calls was routed to the pair's tenant
    (v1.0 gRPC names it in the request, v0.3 gRPC in `x-a2a-tenant` metadata)."""
    assert pair_report(deployment, pair)["tenants"] == [pair[2]]


def matrix_results(deployment: Deployment) -> dict[str, Any]:
    pairs = []
    for pair in PAIRS:
        report = pair_report(deployment, pair)
        pairs.append({**{k: v for k, v in report.items() if k != "tenants"},
                      "cells": {op: {k: v for k, v in cell.items() if k != "problem"}
                                for op, cell in report["cells"].items()}})
    return {"operations": [list(o) for o in OPERATIONS], "pairs": pairs}


def test_matrix_table_is_current(deployment: Deployment) -> None:
    """docs/compatibility.md's matrix section is what this run renders (`make matrix`
    rewrites it)."""
    results = matrix_results(deployment)
    failing = [f"{p['client']}-{p['binding']}-{p['tenant']} {op}"
               for p in results["pairs"] for op, c in p["cells"].items()
               if c["status"] == "fail"]
    assert not failing, f"cells fail (see test_cell): {failing}"
    out = os.environ.get("A2A_MATRIX_RESULTS")
    if out:  # `make matrix`: hand the results to matrix_report.py, which rewrites the page
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        return
    page = PAGE.read_text(encoding="utf-8")
    assert current_section(page) == render(results), (
        "docs/compatibility.md's compatibility matrix is out of date: run `make matrix`")
    passing = sum(c["status"] in PASSING for p in results["pairs"] for c in p["cells"].values())
    assert passing == len(PAIRS) * len(OPERATIONS) - sum(
        1 for p in PAIRS for op, _ in OPERATIONS if expected_non_pass(*p, op))
