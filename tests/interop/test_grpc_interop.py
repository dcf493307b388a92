"""Official SDK clients over gRPC, and official SDK agents as gRPC backends.

Each case is (client SDK version, client binding, tenant). gRPC clients all call the
gateway's one gRPC port: the v1.0 SDK names the tenant in the request's `tenant` field
(copied from its card interface), the v0.3 SDK in `x-a2a-tenant` metadata (the client
script's `--tenant`). Tenants g03/g10 are the SDK agents' gRPC ports (interop_support).

The binding-agnostic assertions are the JSON-RPC suite's own, collected here again with
this module's `pair`; what differs over gRPC (error types, push list/delete) is below.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as v03_grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc
from google.rpc import error_details_pb2, status_pb2

from tests.interop.test_sdk_interop import (  # noqa: F401  (collected here with this module's `pair`)
    _ok,
    test_cancel,
    test_extended_card,
    test_get_task_with_history,
    test_input_required_multi_turn,
    test_push_delivery_reaches_the_webhook_registration,
    test_send_message_reply,
    test_send_task_with_artifact,
    test_streaming_send,
)
from tests.support.interop_support import (
    Deployment,
    client_results,
    push_config_shown,
    webhook_for,
)

G, J = "GRPC", "JSONRPC"
CASES = [
    ("0.3", G, "g10"),  # v0.3 SDK gRPC client → v1.0 SDK agent over gRPC
    ("0.3", G, "a10"),  # ... → v1.0 SDK agent over JSON-RPC
    ("1.0", G, "g03"),  # v1.0 SDK gRPC client → v0.3 SDK agent over gRPC
    ("1.0", G, "a03"),  # ... → v0.3 SDK agent over JSON-RPC
    ("0.3", G, "g03"),  # same version, gRPC on both sides
    ("1.0", G, "g10"),
    ("0.3", G, "demo"),  # → the built-in v0.3 JSON-RPC demo agent
    ("1.0", G, "demo"),
    ("0.3", J, "g10"),  # JSON-RPC clients → gRPC backends of the other version
    ("1.0", J, "g03"),
]
AGENT_NAME = {"g03": "interop-peer-v03", "a03": "interop-peer-v03",
              "g10": "interop-peer-v10", "a10": "interop-peer-v10"}


@pytest.fixture(params=CASES, ids=[f"{c}-{b}-{t}" for c, b, t in CASES])
def case(request: pytest.FixtureRequest, deployment: Deployment,
         ) -> tuple[str, str, str, dict[str, Any]]:
    client, binding, tenant = request.param
    return client, binding, tenant, client_results(deployment, client, tenant, binding)


@pytest.fixture
def pair(case: tuple[str, str, str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    client, _, _, results = case
    return client, results


def test_the_named_tenant_is_reached(case: tuple[str, str, str, dict[str, Any]]) -> None:
    _, _, tenant, results = case
    if tenant in AGENT_NAME:  # the extended card says which agent answered
        assert _ok(results, "extended_card")["name"] == AGENT_NAME[tenant]


def test_task_not_found_error_type(case: tuple[str, str, str, dict[str, Any]]) -> None:
    client, binding, _, results = case
    err = results["not_found"]["error"]
    if client == "1.0":
        # The v1.0 SDK rebuilds the typed error from the ErrorInfo reason (gRPC status
        # details) or the JSON-RPC code.
        assert (err["type"], err["code"]) == ("TaskNotFoundError", -32001)
    elif binding == G:
        # The v0.3 SDK surfaces the raw gRPC error; the gateway keeps its message form.
        assert err["type"] == "AioRpcError"
        assert err["message"] == "TaskNotFoundError: Task not found"
    else:
        assert (err["type"], err["code"]) == ("A2AClientJSONRPCError", -32001)


def test_push_config_crud(case: tuple[str, str, str, dict[str, Any]],
                          deployment: Deployment) -> None:
    client, binding, tenant, results = case
    got = _ok(results, "push_crud")
    webhook = webhook_for(deployment, client, tenant, binding)
    for key in ("created", "got"):
        wanted = push_config_shown(webhook, client, tenant, created=key == "created")
        assert {k: v for k, v in got[key].items() if k != "taskId"} == wanted, key
        assert got[key]["taskId"]
    # a2a-sdk 0.3.26 serves no List/DeleteTaskPushNotificationConfig over gRPC
    # (UNIMPLEMENTED): toward g03 the gateway makes them on the agent's JSON-RPC interface
    # (per-operation interface fallback).
    assert [c["id"] for c in got["listed"]] == ["cfg1"]
    assert got["deleted"] is None and got["listedAfterDelete"] == []


# ---------------------------------------------------------------- seeds, raw stubs

BACKENDS = ["a03", "a10", "g03", "g10", "demo"]


async def _errors(target: str, tenant: str, version_md: str) -> tuple[Any, Any]:
    """GetTask of an unknown task over both gRPC packages; the two AioRpcErrors."""
    async with grpc.aio.insecure_channel(target) as channel:
        errors = []
        for call in (
            pb_grpc.A2AServiceStub(channel).GetTask(
                pb.GetTaskRequest(tenant=tenant, id="no-such-task"),
                metadata=(("a2a-version", version_md),)),
            v03_grpc.A2AServiceStub(channel).GetTask(
                v03pb.GetTaskRequest(name="tasks/no-such-task"),
                metadata=(("x-a2a-tenant", tenant),)),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await call
            errors.append(info.value)
        return errors[0], errors[1]


def _error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    raw = dict(err.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    assert (status.code, status.message) == (err.code().value[0], err.details())
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info


@pytest.mark.parametrize("tenant", BACKENDS)
def test_i2_task_not_found_over_grpc_for_every_backend(deployment: Deployment,
                                                       tenant: str) -> None:
    """Seed I2 over gRPC, whatever dialect the SDK agent behind the tenant speaks."""
    v10, v03 = asyncio.run(_errors(deployment.grpc_target(), tenant, "1.0"))
    assert v10.code() == grpc.StatusCode.NOT_FOUND
    info = _error_info(v10)
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")
    assert v03.code() == grpc.StatusCode.NOT_FOUND
    assert v03.details().startswith("TaskNotFoundError: ")


@pytest.mark.parametrize("tenant", ["a10", "g10"])
def test_i6_a2a_version_metadata_like_the_header(deployment: Deployment, tenant: str) -> None:
    """Seed I6 over gRPC: `1.0.1` is 1.0; an unserved version is refused by the gateway."""
    v10, _ = asyncio.run(_errors(deployment.grpc_target(), tenant, "1.0.1"))
    assert _error_info(v10).reason == "TASK_NOT_FOUND"  # served: the agent was asked
    v10, _ = asyncio.run(_errors(deployment.grpc_target(), tenant, "9.9"))
    assert v10.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _error_info(v10).reason == "VERSION_NOT_SUPPORTED"
