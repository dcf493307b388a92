"""Sample requests that carry everything a client of one version can say, per operation.

Sent through the gateway's own codecs (never to the agent), they show which fields a
client's call would lose on the way to the backend, and what the loss policy does then.
v1.0 samples are canonical messages; v0.3 ones are v0.3 JSON-RPC params decoded by the
v0.3 JSON-RPC dialect, and for v0.3 REST/gRPC clients passed through the v0.3 proto
(what those clients can express at all).
"""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.dialects.grpc import GRPC_V03, wire_method
from translators.dialects.jsonrpc import JSONRPC_V03
from translators.loss import LossReport
from translators.versions import V10

_HOOK = "https://hooks.example/a2a"


def _message_v10() -> pb.Message:
    msg = pb.Message(message_id="m1", role=pb.ROLE_USER, reference_task_ids=["t0"],
                     extensions=["https://ext.example/x"])
    msg.parts.add(text="hello")
    data = msg.parts.add()
    data.data.list_value.values.add(number_value=1)  # not an object: v0.3 wants one
    msg.parts.add(raw=b"\x00\x01", filename="b.bin", media_type="application/octet-stream")
    msg.metadata.update({"a": 1})
    return msg


def _v10(op: str) -> ProtoMessage:
    meta = struct_pb2.Struct()
    meta.update({"b": 2})
    samples: dict[str, ProtoMessage] = {
        ops.SEND: pb.SendMessageRequest(message=_message_v10(), metadata=meta),
        ops.STREAM: pb.SendMessageRequest(message=_message_v10(), metadata=meta),
        ops.GET_TASK: pb.GetTaskRequest(id="t1", history_length=2),
        ops.LIST_TASKS: pb.ListTasksRequest(context_id="c1", page_size=10),
        ops.CANCEL: pb.CancelTaskRequest(id="t1", metadata=meta),
        ops.SUBSCRIBE: pb.SubscribeToTaskRequest(id="t1"),
        ops.PUSH_CREATE: pb.TaskPushNotificationConfig(
            task_id="t1", id="c1", url=_HOOK, token="tok",
            authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="c")),
        ops.PUSH_GET: pb.GetTaskPushNotificationConfigRequest(task_id="t1", id="c1"),
        ops.PUSH_LIST: pb.ListTaskPushNotificationConfigsRequest(task_id="t1", page_size=5),
        ops.PUSH_DELETE: pb.DeleteTaskPushNotificationConfigRequest(task_id="t1", id="c1"),
        ops.EXTENDED_CARD: pb.GetExtendedAgentCardRequest(),
    }
    return samples[op]


_MESSAGE_J03: dict[str, Any] = {
    "kind": "message", "messageId": "m1", "role": "user", "referenceTaskIds": ["t0"],
    "extensions": ["https://ext.example/x"], "metadata": {"a": 1},
    "parts": [{"kind": "text", "text": "hello"}, {"kind": "data", "data": {"k": 1}},
              {"kind": "file", "file": {"bytes": "AAE=", "name": "b.bin",
                                        "mimeType": "application/octet-stream"}}]}
_META = {"metadata": {"a": 1}}
_J03: dict[str, dict[str, Any]] = {
    ops.SEND: {"message": _MESSAGE_J03, "metadata": {"b": 2}},
    ops.STREAM: {"message": _MESSAGE_J03, "metadata": {"b": 2}},
    ops.GET_TASK: {"id": "t1", "historyLength": 2, **_META},
    ops.CANCEL: {"id": "t1", **_META},
    ops.SUBSCRIBE: {"id": "t1", **_META},
    ops.PUSH_CREATE: {"taskId": "t1", "pushNotificationConfig": {
        "id": "c1", "url": _HOOK, "token": "tok",
        "authentication": {"schemes": ["Bearer"], "credentials": "c"}}},
    ops.PUSH_GET: {"id": "t1", "pushNotificationConfigId": "c1", **_META},
    ops.PUSH_LIST: {"id": "t1", **_META},
    ops.PUSH_DELETE: {"id": "t1", "pushNotificationConfigId": "c1", **_META},
    ops.EXTENDED_CARD: {},
}


def client_ops(version: str) -> list[ops.Operation]:
    """The operations a client of this version can call at all."""
    return [op for op in ops.OPERATIONS if version == V10 or op.jsonrpc_v03 is not None]


def sample(op: ops.Operation, binding: str, version: str, loss: LossReport) -> ProtoMessage:
    """The canonical request a rich client call of this dialect decodes to; what the
    client's own decoding loses is recorded in ``loss`` (as the gateway's ingress does)."""
    if version == V10:
        return _v10(op.name)
    if binding == "JSONRPC":
        return JSONRPC_V03.decode_params(op, dict(_J03[op.name]), loss)
    request = JSONRPC_V03.decode_params(op, dict(_J03[op.name]), LossReport())
    # v0.3 REST and gRPC clients speak the v0.3 proto: what it cannot hold they never send.
    raw = GRPC_V03.backend(op, request, LossReport()).requests[0].body
    return GRPC_V03.decode_request(wire_method(op, GRPC_V03.version), raw, loss)
