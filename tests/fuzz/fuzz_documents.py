"""Valid documents of every dialect, the seeds the mutators start from.

- Protos of either package with random field values, built by walking the generated
  descriptors (gRPC bytes, and as ProtoJSON the v1.0 JSON-RPC params and both REST
  bodies). Strings come from pools that matter to the gateway (tenants, ids, resource
  names, webhook URLs); `wire=True` also allows what only the binary form can carry
  (unknown enum numbers, out-of-range timestamps).
- J03 params (v0.3 JSON-RPC), written by hand: v0.3 JSON-RPC has no proto.
- The operation tables of all three bindings, read from the generated descriptors and
  translators/operations.py (the contract's own table of names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message as ProtoMessage
from hypothesis import strategies as st

from tests.fuzz.fuzz_values import JSON, clean_ids, ids, media_types, tenants, urls
from translators import operations as ops

V03, V10 = "0.3", "1.0"
VERSIONS = (V03, V10)
F = FieldDescriptor
_INT_RANGES = {F.TYPE_INT32: 31, F.TYPE_SINT32: 31, F.TYPE_SFIXED32: 31, F.TYPE_INT64: 63,
               F.TYPE_SINT64: 63, F.TYPE_SFIXED64: 63}
_UINT_RANGES = {F.TYPE_UINT32: 32, F.TYPE_FIXED32: 32, F.TYPE_UINT64: 64, F.TYPE_FIXED64: 64}
# Proto strings must be valid UTF-8: no lone surrogates (the byte mutator breaks them).
proto_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
# v0.3 resource names: mostly well-formed, a third odd.
NAMES = ["tasks/", "tasks//x", "task-1", "tasks/a/b/c", "tasks/task-1/pushNotificationConfigs/",
         "tasks/task-1/pushNotificationConfigs/cfg-1/x", "", "/tasks/task-1"]
task_names = clean_ids.map(lambda i: f"tasks/{i}")
config_names = st.tuples(clean_ids, clean_ids).map(
    lambda t: f"tasks/{t[0]}/pushNotificationConfigs/{t[1]}")
odd_names = st.sampled_from(NAMES) | proto_text
# Fields a request is useless without (the gateway refuses it before anything else):
# always set in generated messages, so that most of them reach the backend. Mutations
# and edited bytes take them away again.
REQUIRED = {
    "lf.a2a.v1.SendMessageRequest": {"message"},
    "lf.a2a.v1.Message": {"message_id", "role", "parts"},
    "lf.a2a.v1.Part": {"content"}, "lf.a2a.v1.GetTaskRequest": {"id"},
    "lf.a2a.v1.CancelTaskRequest": {"id"}, "lf.a2a.v1.SubscribeToTaskRequest": {"id"},
    "lf.a2a.v1.TaskPushNotificationConfig": {"task_id", "url"},
    "lf.a2a.v1.GetTaskPushNotificationConfigRequest": {"task_id", "id"},
    "lf.a2a.v1.DeleteTaskPushNotificationConfigRequest": {"task_id", "id"},
    "lf.a2a.v1.ListTaskPushNotificationConfigsRequest": {"task_id"},
    "a2a.v1.SendMessageRequest": {"request"}, "a2a.v1.Message": {"message_id", "role", "content"},
    "a2a.v1.Part": {"part"}, "a2a.v1.FilePart": {"file"}, "a2a.v1.GetTaskRequest": {"name"},
    "a2a.v1.CancelTaskRequest": {"name"}, "a2a.v1.TaskSubscriptionRequest": {"name"},
    "a2a.v1.CreateTaskPushNotificationConfigRequest": {"parent", "config"},
    "a2a.v1.TaskPushNotificationConfig": {"name", "push_notification_config"},
    "a2a.v1.PushNotificationConfig": {"url"},
    "a2a.v1.GetTaskPushNotificationConfigRequest": {"name"},
    "a2a.v1.DeleteTaskPushNotificationConfigRequest": {"name"},
    "a2a.v1.ListTaskPushNotificationConfigRequest": {"parent"},
}
_MIN_SECONDS, _MAX_SECONDS = -62135596800, 253402300799
struct_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | proto_text,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(proto_text, inner, max_size=2),
    max_leaves=4)


def _clean(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return strategy.filter(lambda s: not any("\ud800" <= c <= "\udfff" for c in s))


def _string_for(field: FieldDescriptor) -> st.SearchStrategy[str]:
    name = field.name
    if name == "tenant":
        return _clean(tenants)
    if name == "url":
        return urls
    if name in ("name", "parent"):
        push = name == "name" and "PushNotification" in field.containing_type.name
        good = config_names if push else task_names
        return st.one_of(good, good, odd_names)
    if name == "id" or name.endswith("_id") or name.endswith("_ids"):
        return _clean(ids).filter(bool) if name in ("id", "task_id", "message_id") else _clean(ids)
    if name in ("media_type", "mime_type", "accepted_output_modes"):
        return media_types
    return proto_text


def _scalar(field: FieldDescriptor, wire: bool) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == F.TYPE_STRING:
        return _string_for(field)
    if kind == F.TYPE_BYTES:
        return st.binary(max_size=24)
    if kind == F.TYPE_BOOL:
        return st.booleans()
    if kind in _INT_RANGES:
        bits = _INT_RANGES[kind]
        return st.integers(-(2**bits), 2**bits - 1) | st.sampled_from([0, -1, 1, 2**bits - 1])
    if kind in _UINT_RANGES:
        return st.integers(0, 2 ** _UINT_RANGES[kind] - 1)
    if kind in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(width=64 if kind == F.TYPE_DOUBLE else 32, allow_nan=wire,
                         allow_infinity=wire)
    if kind == F.TYPE_ENUM:
        known = st.sampled_from([v.number for v in field.enum_type.values])
        meaningful = st.sampled_from([v.number for v in field.enum_type.values if v.number])
        return st.one_of(meaningful, meaningful, known | st.integers(-3, 50) if wire else known)
    raise AssertionError(f"no strategy for {field.full_name}")


def _synthetic(oneof: OneofDescriptor) -> bool:
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


@st.composite
def protos(draw: st.DrawFn, desc: Descriptor, depth: int = 5, wire: bool = False,
           ) -> ProtoMessage:
    """A message of type ``desc`` with a random subset of its fields set."""
    msg = message_factory.GetMessageClass(desc)()
    if desc.full_name in ("google.protobuf.Struct", "google.protobuf.Value"):
        value = draw(st.dictionaries(proto_text, struct_values, max_size=3)
                     if desc.full_name.endswith("Struct") else struct_values)
        json_format.ParseDict(value, msg)
        return msg
    if desc.full_name == "google.protobuf.Timestamp":
        low, high = (-(2**40), 2**40) if wire else (_MIN_SECONDS, _MAX_SECONDS)
        msg.seconds = draw(st.integers(low, high))
        msg.nanos = draw(st.integers(0, 999_999_999))
        return msg
    required = REQUIRED.get(desc.full_name, set())
    chosen = {o.name: draw(st.sampled_from([*([] if o.name in required else [None]), *o.fields]))
              for o in desc.oneofs if not _synthetic(o)}
    for field in desc.fields:
        oneof = field.containing_oneof
        if oneof is not None and not _synthetic(oneof):
            if chosen[oneof.name] is not field:
                continue
        elif field.name not in required and not draw(st.booleans()):
            continue
        _fill(draw, msg, field, depth, wire, field.name in required)
    return msg


def _fill(draw: st.DrawFn, msg: ProtoMessage, field: FieldDescriptor, depth: int,
          wire: bool, required: bool = False) -> None:
    target = getattr(msg, field.name)
    sub = field.message_type
    if sub is not None and sub.GetOptions().map_entry:
        key_field, value_field = sub.fields_by_name["key"], sub.fields_by_name["value"]
        for key in draw(st.lists(_scalar(key_field, wire), max_size=2)):
            if value_field.message_type is None:
                target[key] = draw(_scalar(value_field, wire))
            elif depth > 0:
                target[key].CopyFrom(draw(protos(value_field.message_type, depth - 1, wire)))
        return
    if sub is not None and depth <= 0:
        return
    if field.is_repeated:
        for _ in range(draw(st.integers(1 if required else 0, 2))):
            if sub is None:
                target.append(draw(_scalar(field, wire)))
            else:
                target.add().CopyFrom(draw(protos(sub, depth - 1, wire)))
    elif sub is not None:
        target.CopyFrom(draw(protos(sub, depth - 1, wire)))
    else:
        setattr(msg, field.name, draw(_scalar(field, wire)))


def protojson(desc: Descriptor) -> st.SearchStrategy[JSON]:
    """ProtoJSON of a random valid message (camelCase names, int64 as strings)."""
    return protos(desc).map(lambda m: json_format.MessageToDict(m))


# ---------------------------------------------------------------- J03 (v0.3 JSON-RPC)


def _with_optional(required: dict[str, st.SearchStrategy[Any]],
                   optional: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[JSON]:
    return st.fixed_dictionaries(required, optional=optional)


j03_metadata = st.dictionaries(proto_text, struct_values, max_size=2)
j03_parts = st.one_of(
    st.fixed_dictionaries({"kind": st.just("text"), "text": proto_text}),
    st.fixed_dictionaries({"kind": st.just("file"), "file": _with_optional(
        {}, {"bytes": st.just("AAEC"), "uri": urls, "mimeType": media_types, "name": ids})}),
    st.fixed_dictionaries({"kind": st.just("data"), "data": j03_metadata}),
)
j03_messages = _with_optional(
    {"kind": st.just("message"), "messageId": ids, "role": st.sampled_from(["user", "agent"]),
     "parts": st.lists(j03_parts, max_size=3)},
    {"contextId": ids, "taskId": ids, "metadata": j03_metadata,
     "extensions": st.lists(urls, max_size=2), "referenceTaskIds": st.lists(ids, max_size=2)})
j03_push_configs = _with_optional(
    {"url": urls},
    {"id": ids, "token": ids, "authentication": _with_optional(
        {"schemes": st.lists(st.sampled_from(["Bearer", "Basic", ""]), max_size=2)},
        {"credentials": ids})})
j03_send = _with_optional(
    {"message": j03_messages},
    {"configuration": _with_optional({}, {
        "acceptedOutputModes": st.lists(media_types, max_size=2),
        "pushNotificationConfig": j03_push_configs,
        "historyLength": st.integers(-2, 10), "blocking": st.booleans()}),
     "metadata": j03_metadata})
_task_id = _with_optional({"id": ids}, {"metadata": j03_metadata})
J03_PARAMS: dict[str, st.SearchStrategy[Any]] = {
    ops.SEND: j03_send,
    ops.STREAM: j03_send,
    ops.GET_TASK: _with_optional({"id": ids}, {"historyLength": st.integers(-2, 10),
                                               "metadata": j03_metadata}),
    ops.CANCEL: _task_id,
    ops.SUBSCRIBE: _task_id,
    ops.PUSH_CREATE: st.fixed_dictionaries({"taskId": ids,
                                            "pushNotificationConfig": j03_push_configs}),
    ops.PUSH_GET: _with_optional({"id": ids}, {"pushNotificationConfigId": ids,
                                               "metadata": j03_metadata}),
    ops.PUSH_LIST: _task_id,
    ops.PUSH_DELETE: _with_optional({"id": ids, "pushNotificationConfigId": ids},
                                    {"metadata": j03_metadata}),
    ops.EXTENDED_CARD: st.none() | st.just({}),
}

# ---------------------------------------------------------------- operation tables

SERVICE_FILES = {V10: pb.DESCRIPTOR, V03: v03pb.DESCRIPTOR}


@dataclass(frozen=True)
class RpcMethod:
    """One JSON-RPC method of one version, with its valid params."""

    version: str
    name: str
    op: str
    streaming: bool
    params: st.SearchStrategy[Any]


def _rpc_methods() -> tuple[RpcMethod, ...]:
    out = []
    for op in ops.OPERATIONS:
        out.append(RpcMethod(V10, op.name, op.name, op.streaming,
                             protojson(op.request.DESCRIPTOR)))
        if op.jsonrpc_v03:
            out.append(RpcMethod(V03, op.jsonrpc_v03, op.name, op.streaming,
                                 J03_PARAMS[op.name]))
    return tuple(out)


RPC_METHODS = _rpc_methods()
RPC_BY_NAME = {m.name: m for m in RPC_METHODS}


@dataclass(frozen=True)
class GrpcMethod:
    version: str
    service: str
    name: str
    request: Descriptor
    response: Descriptor
    streaming: bool

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"


def _grpc_methods() -> tuple[GrpcMethod, ...]:
    out = []
    for version, file in SERVICE_FILES.items():
        service = file.services_by_name["A2AService"]
        out += [GrpcMethod(version, service.full_name, m.name, m.input_type, m.output_type,
                           m.server_streaming) for m in service.methods]
    return tuple(out)


GRPC_METHODS = _grpc_methods()


def grpc_method(version: str, op: str) -> GrpcMethod:
    """The gRPC method that carries an operation in a version."""
    name = op if version == V10 else ops.BY_NAME[op].grpc_v03
    return next(m for m in GRPC_METHODS if m.version == version and m.name == name)
