"""The gRPC ingress end to end: raw stubs of both packages → gateway → v0.3 demo agent.

One port serves `lf.a2a.v1.A2AService` and `a2a.v1.A2AService`; the demo agent behind
it speaks v0.3 JSON-RPC, so every call here crosses a binding and, for v1.0 clients, a
version too.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from tests.integration.grpc_support import (
    FILE_CONTENT,
    V10_MD,
    collect,
    error_info,
    kinds,
    p03_send,
    p10_send,
    rpc_error,
    status_details,
    v03_stub,
    v10_stub,
)
from tests.support.helpers import MakeGateway, free_port, v03


@pytest.fixture
async def target(make_gateway: MakeGateway, demo_agent: str) -> str:
    """The gRPC listener of a gateway in front of the demo agent."""
    port = free_port()
    await make_gateway({"demo": v03(demo_agent)}, grpc_port=port)
    return f"127.0.0.1:{port}"


@pytest.fixture
async def channel(target: str) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(target) as channel:
        yield channel


# ---------------------------------------------------------------- v1.0 clients


async def test_v10_send_message_and_task_with_file_bytes(channel: grpc.aio.Channel) -> None:
    stub = v10_stub(channel)
    reply = await stub.SendMessage(p10_send("hi"), metadata=V10_MD)
    assert reply.WhichOneof("payload") == "message"
    assert reply.message.role == pb.ROLE_AGENT and reply.message.parts[0].text == "echo: hi"
    reply = await stub.SendMessage(p10_send("task: x"), metadata=V10_MD)
    task = reply.task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    text, file, data = task.artifacts[0].parts
    assert text.text == "built x"
    assert (file.raw, file.filename, file.media_type) == (
        FILE_CONTENT, "blob.bin", "application/octet-stream")
    assert data.data.struct_value.fields["k"].number_value == 1


async def test_v10_stream_in_order_ends_after_completed(channel: grpc.aio.Channel) -> None:
    events = await collect(v10_stub(channel).SendStreamingMessage(p10_send("stream: 3"),
                                                                 metadata=V10_MD))
    assert kinds(events) == ["task", "status_update", *["artifact_update"] * 3, "status_update"]
    assert [e.artifact_update.artifact.parts[0].text for e in events[2:5]] == [
        "chunk 0", "chunk 1", "chunk 2"]
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED


async def test_v10_get_cancel_and_push_crud(channel: grpc.aio.Channel) -> None:
    stub = v10_stub(channel)
    reply = await stub.SendMessage(p10_send("slow", return_immediately=True), metadata=V10_MD)
    task_id = reply.task.id
    got = await stub.GetTask(pb.GetTaskRequest(id=task_id, history_length=5), metadata=V10_MD)
    assert got.id == task_id and got.history[0].parts[0].text == "slow"
    cfg = pb.TaskPushNotificationConfig(
        task_id=task_id, id="c1", url="https://hooks.example/x", token="tok",
        authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="s"))
    assert await stub.CreateTaskPushNotificationConfig(cfg, metadata=V10_MD) == cfg
    assert await stub.GetTaskPushNotificationConfig(
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id="c1"), metadata=V10_MD) == cfg
    listed = await stub.ListTaskPushNotificationConfigs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id), metadata=V10_MD)
    assert list(listed.configs) == [cfg]
    await stub.DeleteTaskPushNotificationConfig(
        pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="c1"), metadata=V10_MD)
    listed = await stub.ListTaskPushNotificationConfigs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id), metadata=V10_MD)
    assert list(listed.configs) == []
    canceled = await stub.CancelTask(pb.CancelTaskRequest(id=task_id), metadata=V10_MD)
    assert canceled.status.state == pb.TASK_STATE_CANCELED


async def test_i2_unknown_task_over_grpc_is_not_found_with_error_info(
        channel: grpc.aio.Channel) -> None:
    """Seed I2: v1.0 gRPC GetTask of an unknown task → NOT_FOUND + ErrorInfo details."""
    err = await rpc_error(v10_stub(channel).GetTask(pb.GetTaskRequest(id="nope"),
                                                   metadata=V10_MD))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(err)
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")
    assert info.metadata["taskId"] == "nope"
    assert dict(err.trailing_metadata())["x-request-id"]


async def test_v10_list_tasks_against_v03_backend_from_the_index(
        channel: grpc.aio.Channel) -> None:
    stub = v10_stub(channel)
    message = pb.Message(message_id="m-l", role=pb.ROLE_USER, context_id="ctx-grpc-list",
                         parts=[pb.Part(text="task: l")])
    sent = await stub.SendMessage(pb.SendMessageRequest(message=message), metadata=V10_MD)
    listed = await stub.ListTasks(pb.ListTasksRequest(context_id="ctx-grpc-list"),
                                  metadata=V10_MD)
    assert [t.id for t in listed.tasks] == [sent.task.id]
    assert listed.tasks[0].status.state == pb.TASK_STATE_COMPLETED
    assert (listed.total_size, listed.next_page_token) == (1, "")
    err = await rpc_error(stub.ListTasks(pb.ListTasksRequest(page_size=101), metadata=V10_MD))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- v0.3 clients


async def test_v03_send_message_and_task_with_file_bytes(channel: grpc.aio.Channel) -> None:
    stub = v03_stub(channel)
    reply = await stub.SendMessage(p03_send("hi"))
    assert reply.WhichOneof("payload") == "msg"
    assert reply.msg.role == v03pb.ROLE_AGENT and reply.msg.content[0].text == "echo: hi"
    reply = await stub.SendMessage(p03_send("task: x"))
    task = reply.task
    assert task.status.state == v03pb.TASK_STATE_COMPLETED
    text, file, data = task.artifacts[0].parts
    assert text.text == "built x"
    # v0.3 SDK peers put base64 text in `file_with_bytes` (the double-base64 convention).
    assert base64.b64decode(file.file.file_with_bytes) == FILE_CONTENT
    assert (file.file.name, file.file.mime_type) == ("blob.bin", "application/octet-stream")
    assert data.data.data.fields["k"].number_value == 1


async def test_v03_stream_with_final_flag(channel: grpc.aio.Channel) -> None:
    events = await collect(v03_stub(channel).SendStreamingMessage(p03_send("stream: 2")))
    assert kinds(events) == ["task", "status_update", "artifact_update", "artifact_update",
                             "status_update"]
    statuses = [e.status_update for e in events if e.HasField("status_update")]
    assert [s.final for s in statuses] == [False, True]
    assert statuses[-1].status.state == v03pb.TASK_STATE_COMPLETED


async def test_v03_get_cancel_and_push_crud(channel: grpc.aio.Channel) -> None:
    stub = v03_stub(channel)
    reply = await stub.SendMessage(p03_send("slow", blocking=False))
    task_id = reply.task.id
    name = f"tasks/{task_id}"
    got = await stub.GetTask(v03pb.GetTaskRequest(name=name))
    assert got.id == task_id
    inner = v03pb.PushNotificationConfig(
        id="c1", url="https://hooks.example/x", token="tok",
        authentication=v03pb.AuthenticationInfo(schemes=["Bearer"], credentials="s"))
    cfg_name = f"{name}/pushNotificationConfigs/c1"
    created = await stub.CreateTaskPushNotificationConfig(
        v03pb.CreateTaskPushNotificationConfigRequest(
            parent=name, config_id="c1",
            config=v03pb.TaskPushNotificationConfig(push_notification_config=inner)))
    assert created == v03pb.TaskPushNotificationConfig(name=cfg_name, push_notification_config=inner)
    # Not relayed (v0.3 on both sides): the gateway cannot vouch for who set the
    # backend's copy, so get and list show it without its credentials.
    stored = v03pb.TaskPushNotificationConfig(
        name=cfg_name, push_notification_config=v03pb.PushNotificationConfig(
            id="c1", url="https://hooks.example/x",
            authentication=v03pb.AuthenticationInfo(schemes=["Bearer"])))
    assert await stub.GetTaskPushNotificationConfig(
        v03pb.GetTaskPushNotificationConfigRequest(name=cfg_name)) == stored
    listed = await stub.ListTaskPushNotificationConfig(
        v03pb.ListTaskPushNotificationConfigRequest(parent=name))
    assert list(listed.configs) == [stored]
    await stub.DeleteTaskPushNotificationConfig(
        v03pb.DeleteTaskPushNotificationConfigRequest(name=cfg_name))
    listed = await stub.ListTaskPushNotificationConfig(
        v03pb.ListTaskPushNotificationConfigRequest(parent=name))
    assert list(listed.configs) == []
    canceled = await stub.CancelTask(v03pb.CancelTaskRequest(name=name))
    assert canceled.status.state == v03pb.TASK_STATE_CANCELLED


async def test_v03_unknown_task_is_not_found_with_name_prefix(channel: grpc.aio.Channel) -> None:
    err = await rpc_error(v03_stub(channel).GetTask(v03pb.GetTaskRequest(name="tasks/nope")))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    # The v0.3 SDK client splits this on ": " to rebuild the error type (reference §6.4).
    assert err.details() == "TaskNotFoundError: Task not found"
    assert status_details(err) is None


async def test_v03_bad_resource_name_is_invalid_argument(channel: grpc.aio.Channel) -> None:
    err = await rpc_error(v03_stub(channel).GetTask(v03pb.GetTaskRequest(name="t1")))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("InvalidParamsError: name must look like 'tasks/{id}'")


# ---------------------------------------------------------------- versions, discovery


async def test_rc_peer_on_a2a_v1_is_refused(channel: grpc.aio.Channel) -> None:
    """`a2a.v1` + `a2a-version: 1.x` is a v1.0.0-rc peer (reference §6.5)."""
    err = await rpc_error(v03_stub(channel).GetTask(v03pb.GetTaskRequest(name="tasks/x"),
                                                   metadata=(("a2a-version", "1.0"),)))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "v1.0.0-rc" in err.details() and "lf.a2a.v1.A2AService" in err.details()
    assert error_info(err).reason == "VERSION_NOT_SUPPORTED"


async def test_i6_a2a_version_metadata_is_read_like_the_header(
        channel: grpc.aio.Channel, make_gateway: MakeGateway, demo_agent: str) -> None:
    """Seed I6: gRPC `a2a-version` metadata follows the A2A-Version rules."""
    stub = v10_stub(channel)
    err = await rpc_error(stub.GetTask(pb.GetTaskRequest(id="x"),
                                       metadata=(("a2a-version", "0.5"),)))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details() == "Protocol version 0.5 is not supported. Supported: 1.0, 0.3"
    assert error_info(err).reason == "VERSION_NOT_SUPPORTED"
    # A patch number takes no part; absent is lenient for the v1.0 package.
    for md in ((("a2a-version", "1.0.1"),), ()):
        reply = await stub.SendMessage(p10_send("hi"), metadata=md)
        assert reply.message.parts[0].text == "echo: hi"
    # v0.3 package: absent or 0.3 is v0.3; an unknown version is refused in v0.3 form.
    assert (await v03_stub(channel).SendMessage(p03_send("hi"), metadata=(
        ("a2a-version", "0.3"),))).msg.content[0].text == "echo: hi"
    err = await rpc_error(v03_stub(channel).SendMessage(p03_send("hi"),
                                                       metadata=(("a2a-version", "0.9"),)))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details().startswith("VersionNotSupportedError: Protocol version 0.9")
    # Strict mode: the v1.0 package needs `a2a-version: 1.0`, as A2A-Version over HTTP.
    port = free_port()
    await make_gateway({"demo": v03(demo_agent)}, grpc_port=port, strict_versions=True)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as strict:
        err = await rpc_error(v10_stub(strict).SendMessage(p10_send("hi")))
        assert error_info(err).reason == "VERSION_NOT_SUPPORTED"
        reply = await v10_stub(strict).SendMessage(p10_send("hi"), metadata=V10_MD)
        assert reply.message.parts[0].text == "echo: hi"


async def test_reflection_lists_both_services(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    names: set[str] = set()
    async for reply in stub.ServerReflectionInfo(iter([request])):
        names |= {s.name for s in reply.list_services_response.service}
    assert {"lf.a2a.v1.A2AService", "a2a.v1.A2AService"} <= names


async def test_reflection_resolves_the_whole_schema(target: str) -> None:
    """What grpcurl does: rebuild every service, its messages and their imports."""

    def resolve() -> dict[str, int]:
        with grpc.insecure_channel(target) as sync_channel:
            pool = DescriptorPool(ProtoReflectionDescriptorDatabase(sync_channel))
            card = pool.FindMessageTypeByName("lf.a2a.v1.AgentCard")
            assert card.fields_by_name["supported_interfaces"].message_type.name == \
                "AgentInterface"
            return {name: len(pool.FindServiceByName(name).methods)
                    for name in ("lf.a2a.v1.A2AService", "a2a.v1.A2AService")}

    # The sync reflection client runs in a thread: the gateway serves on this loop.
    assert await asyncio.to_thread(resolve) == {"lf.a2a.v1.A2AService": 11,
                                                "a2a.v1.A2AService": 10}


async def test_raw_v03_bytes_and_unknown_fields(channel: grpc.aio.Channel) -> None:
    """The package picks the schema (reference §6.2); unknown fields are ignored (I13)."""
    send = p03_send("task: raw")
    send.request.content.add().file.file_with_bytes = base64.b64encode(FILE_CONTENT)
    raw = channel.unary_unary("/a2a.v1.A2AService/SendMessage")
    reply = v03pb.SendMessageResponse.FromString(await raw(send.SerializeToString()))
    assert reply.task.status.state == v03pb.TASK_STATE_COMPLETED  # blocking=true honoured
    # Field 99 exists in neither version: a v1.0 request that carries it still works.
    unknown = p10_send("hi").SerializeToString() + b"\x98\x06\x01"  # field 99, varint 1
    raw10 = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")
    reply10 = pb.SendMessageResponse.FromString(await raw10(unknown, metadata=V10_MD))
    assert reply10.message.parts[0].text == "echo: hi"
    err = await rpc_error(raw10(b"\xff\xff\xff", metadata=V10_MD))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(err).reason == "INVALID_REQUEST"


async def test_tenant_by_field_or_metadata(make_gateway: MakeGateway, demo_agent: str) -> None:
    port = free_port()
    await make_gateway({"one": v03(demo_agent), "two": v03(demo_agent)}, grpc_port=port,
                       default_tenant="one")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await v10_stub(channel).SendMessage(p10_send("hi", tenant="two"),
                                                    metadata=V10_MD)
        assert reply.message.parts[0].text == "echo: hi"
        err = await rpc_error(v10_stub(channel).SendMessage(p10_send("hi", tenant="nine"),
                                                            metadata=V10_MD))
        assert err.code() == grpc.StatusCode.NOT_FOUND
        assert error_info(err).reason == "TENANT_NOT_FOUND"
        assert error_info(err).metadata["tenant"] == "nine"
        # v0.3 messages have no tenant: the `x-a2a-tenant` metadata names it.
        reply = await v03_stub(channel).SendMessage(p03_send("hi"),
                                                    metadata=(("x-a2a-tenant", "two"),))
        assert reply.msg.content[0].text == "echo: hi"
        err = await rpc_error(v03_stub(channel).SendMessage(
            p03_send("hi"), metadata=(("x-a2a-tenant", "nine"),)))
        assert err.details() == "TenantNotFoundError: unknown tenant 'nine'"


async def test_backend_down_is_unavailable(make_gateway: MakeGateway) -> None:
    port = free_port()
    await make_gateway({"down": v03(f"http://127.0.0.1:{free_port()}/")}, grpc_port=port)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        err = await rpc_error(v10_stub(channel).SendMessage(p10_send("hi"), metadata=V10_MD))
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        info = error_info(err)
        assert (info.reason, info.domain) == ("BACKEND_UNAVAILABLE", "a2a-gateway")
        err = await rpc_error(v03_stub(channel).SendMessage(p03_send("hi")))
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        assert err.details().startswith("BackendUnavailableError: the backend is unavailable "
                                        "(tenant down, request ")


async def test_losses_are_reported_in_trailing_metadata(channel: grpc.aio.Channel) -> None:
    request = p10_send("hi")
    request.message.parts[0].filename = "note.txt"  # a text part cannot name a file in v0.3
    call = v10_stub(channel).SendMessage(request, metadata=(*V10_MD, ("x-request-id", "r-1")))
    assert (await call).message.parts[0].text == "echo: hi"
    trailers = dict(await call.trailing_metadata())
    assert trailers["x-request-id"] == "r-1"
    assert "filename" in trailers["a2a-gateway-dropped"]
