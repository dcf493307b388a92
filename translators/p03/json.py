"""P03 JSON (ProtoJSON of the v0.3 proto, i.e. v0.3 REST bodies) ⇄ the v0.3 messages.

The v0.3 REST codec's only way in and out of the v0.3 messages, mirroring
translators/protojson.py for P10 (reference §0 "Three v0.3 JSON shapes", §3.0). Parsing
is lenient: unknown fields are ignored, `TASK_STATE_CANCELED` (the v1.0 spelling) is
taken for `TASK_STATE_CANCELLED`, and zone-less timestamps mean UTC (§3.4).
"""

from __future__ import annotations

import functools
import re
from typing import Any, TypeVar

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from translators.errors import a2a_error
from translators.p03.common import task_name

M = TypeVar("M", bound=ProtoMessage)

_TASK_STATE = "a2a.v1.TaskState"
_TIMESTAMP = "google.protobuf.Timestamp"
# Well-known types whose JSON is not an object of fields: never walked into.
_OPAQUE = frozenset({"google.protobuf.Struct", "google.protobuf.Value",
                     "google.protobuf.ListValue", _TIMESTAMP, "google.protobuf.Empty"})
_HAS_ZONE = re.compile(r"(?:[Zz]|[+-]\d\d:?\d\d)\Z")


def parse_p03(data: Any, cls: type[M], *, error: str = "InvalidParamsError") -> M:
    """A v0.3 message from its ProtoJSON; bad shapes become ``error`` (InvalidParams on a
    client's request, InvalidAgentResponse on what a backend sent)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise a2a_error(error, f"expected a JSON object for {cls.DESCRIPTOR.name}")
    try:
        msg: M = json_format.ParseDict(_lenient(data, cls.DESCRIPTOR), cls(),
                                       ignore_unknown_fields=True)
        return msg
    except json_format.ParseError as exc:
        raise a2a_error(error, f"{cls.DESCRIPTOR.name}: {exc}") from exc


def dump_p03(msg: ProtoMessage) -> dict[str, Any]:
    """camelCase keys, defaults omitted: what the v0.3 SDKs' REST transports send."""
    out: dict[str, Any] = json_format.MessageToDict(msg)
    return out


def _lenient(data: dict[str, Any], desc: Descriptor) -> dict[str, Any]:
    """A copy of ``data`` with the v0.3 spellings the parser would otherwise lose.

    Guided by the descriptor so that user data (metadata, data parts) is never touched.
    It matters: with unknown fields ignored, ProtoJSON silently drops an enum name it
    does not know, so `TASK_STATE_CANCELED` would read as UNSPECIFIED.
    """
    out = dict(data)
    fields = _fields_by_key(desc)
    for key, value in data.items():
        field = fields.get(key)
        if field is not None:
            out[key] = _lenient_value(value, field)
    return out


@functools.cache
def _fields_by_key(desc: Descriptor) -> dict[str, FieldDescriptor]:
    # ProtoJSON keys are json_name (`message` for TaskStatus.update), or the proto name.
    out = {f.name: f for f in desc.fields}
    out.update({f.json_name: f for f in desc.fields})
    return out


def _lenient_value(value: Any, field: FieldDescriptor) -> Any:
    if field.is_repeated and isinstance(value, list):
        return [_lenient_one(v, field) for v in value]
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        if isinstance(value, dict):
            return {k: _lenient_one(v, value_field) for k, v in value.items()}
        return value
    return _lenient_one(value, field)


def _lenient_one(value: Any, field: FieldDescriptor) -> Any:
    if field.enum_type is not None and field.enum_type.full_name == _TASK_STATE:
        return "TASK_STATE_CANCELLED" if value == "TASK_STATE_CANCELED" else value
    message = field.message_type
    if message is None:
        return value
    if message.full_name == _TIMESTAMP:
        if isinstance(value, str) and not _HAS_ZONE.search(value.strip()):
            return value.strip() + "Z"
        return value
    if message.full_name in _OPAQUE or not isinstance(value, dict):
        return value
    return _lenient(value, message)


# ---------------------------------------------------------------- v0.3 REST create-push body


def parse_create_push_body(data: Any, task_id: str, *, error: str = "InvalidParamsError",
                           ) -> v03.CreateTaskPushNotificationConfigRequest:
    """`POST /v1/tasks/{task_id}/pushNotificationConfigs` body, in either shape (§2 route
    notes): the SDKs' `{parent, configId, config}`, or the bare TaskPushNotificationConfig
    proto@v0.3.0's `body: "config"` implies. A top-level `config` key tells them apart.
    The path's task wins over any `parent` in the body, as py@v0.3 does.
    """
    if isinstance(data, dict) and "config" in data:
        req = parse_p03(data, v03.CreateTaskPushNotificationConfigRequest, error=error)
    else:
        req = v03.CreateTaskPushNotificationConfigRequest(
            config=parse_p03(data, v03.TaskPushNotificationConfig, error=error))
    req.parent = task_name(task_id, "taskId")
    return req


def dump_create_push_body(req: v03.CreateTaskPushNotificationConfigRequest) -> dict[str, Any]:
    """The SDK shape `{parent, configId, config}`, which py and go servers expect."""
    return dump_p03(req)
