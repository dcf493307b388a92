"""Raw gRPC clients of both packages for the gRPC tests (generated stubs, no SDK)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as v03_grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc
from google.rpc import error_details_pb2, status_pb2

V10_MD = (("a2a-version", "1.0"),)
FILE_CONTENT = b"\x00\x01\x02binary"  # what the demo agent's `task:` artifact file holds


def v10_stub(channel: grpc.aio.Channel) -> pb_grpc.A2AServiceStub:
    return pb_grpc.A2AServiceStub(channel)


def v03_stub(channel: grpc.aio.Channel) -> v03_grpc.A2AServiceStub:
    return v03_grpc.A2AServiceStub(channel)


def p10_send(text: str, *, tenant: str = "", **configuration: Any) -> pb.SendMessageRequest:
    message = pb.Message(message_id=f"m-{text}", role=pb.ROLE_USER, parts=[pb.Part(text=text)])
    return pb.SendMessageRequest(tenant=tenant, message=message,
                                 configuration=pb.SendMessageConfiguration(**configuration))


def p03_send(text: str, *, blocking: bool = True) -> v03pb.SendMessageRequest:
    message = v03pb.Message(message_id=f"m-{text}", role=v03pb.ROLE_USER,
                          content=[v03pb.Part(text=text)])
    return v03pb.SendMessageRequest(request=message,
                                  configuration=v03pb.SendMessageConfiguration(blocking=blocking))


async def rpc_error(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value


async def stream_error(stream: AsyncIterator[Any]) -> tuple[list[Any], grpc.aio.AioRpcError]:
    events: list[Any] = []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for event in stream:
            events.append(event)
    return events, info.value


def status_details(err: grpc.aio.AioRpcError) -> status_pb2.Status | None:
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return status_pb2.Status.FromString(value)
    return None


def error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    """The ErrorInfo of a v1.0 error; its Status must agree with the call's status."""
    status = status_details(err)
    assert status is not None, f"no grpc-status-details-bin: {err}"
    assert status.code == err.code().value[0] and status.message == err.details()
    info = error_details_pb2.ErrorInfo()
    assert len(status.details) == 1 and status.details[0].Unpack(info)
    return info


def kinds(events: list[pb.StreamResponse | v03pb.StreamResponse]) -> list[str]:
    return [str(e.WhichOneof("payload")) for e in events]


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in stream]

