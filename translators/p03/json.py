"""P03 JSON (ProtoJSON of the v0.3 proto, i.e. v0.3 REST bodies) ⇄ the v0.3 messages.

The v0.3 REST codec's only way in and out of the v0.3 messages, mirroring
translators/protojson.py for P10 (reference §0 "Three v0.3 JSON shapes", §3.0). Parsing
is lenient: unknown fields are ignored, `TASK_STATE_CANCELED` (the v1.0 spelling) is
taken for `TASK_STATE_CANCELLED`, and zone-less timestamps mean UTC (§3.4).
"""

from __future__ import annotations

from typing import Any, TypeVar

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from translators.errors import a2a_error
from translators.p03.common import task_name
from translators.protojson import CLIENT_FAULT, Codec
from translators.protojson_scalars import ProtoJsonError

M = TypeVar("M", bound=ProtoMessage)


# v0.3 peers spell TaskState 4 the v1.0 way now and then; ProtoJSON would otherwise drop
# an enum name it does not know (unknown fields are ignored), reading it as UNSPECIFIED.
_ALIASES = {("a2a.v1.TaskState", "TASK_STATE_CANCELED"): "TASK_STATE_CANCELLED"}
P03 = Codec(enum_aliases=_ALIASES, naive_timestamps=True)
P03_CLIENT = Codec(enum_aliases=_ALIASES, naive_timestamps=True, strict_enum_names=True)


def parse_p03(data: Any, cls: type[M], *, error: str = CLIENT_FAULT) -> M:
    """A v0.3 message from its ProtoJSON; bad shapes become ``error`` (InvalidParams on a
    client's request, read with enum names strict; InvalidAgentResponse on what a
    backend sent, read leniently)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise a2a_error(error, f"expected a JSON object for {cls.DESCRIPTOR.name}")
    try:
        return (P03_CLIENT if error == CLIENT_FAULT else P03).parse(data, cls)
    except (ProtoJsonError, json_format.ParseError) as exc:
        raise a2a_error(error, f"{cls.DESCRIPTOR.name}: {exc}") from None


def dump_p03(msg: ProtoMessage) -> dict[str, Any]:
    """camelCase keys, defaults omitted: what the v0.3 SDKs' REST transports send."""
    return P03.dump(msg)


# ---------------------------------------------------------------- v0.3 REST create-push body


def parse_create_push_body(data: Any, task_id: str, *, error: str = CLIENT_FAULT,
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
