"""What a client's request must hold before any backend sees it (spec@v1.0.1 §3.1, §3.4;
reference §3.3, §3.7), checked on the canonical request, so every dialect gets the same
rule and the same InvalidParams.

Two rules cover every field of a kind, found in the request's descriptor (not listed by
hand, so a field a new proto adds is covered): an enum holds one of its enum's values
(proto3 enums are open: gRPC bytes and ProtoJSON numbers can carry any int32, and a
number no version names cannot be translated, filtered on or passed on honestly), and
an id (`id`, `*_id`, `*_ids`: task, context, message, push-config ids) holds no control
character (an id ends up in URL paths, log lines and store keys; a newline in one is
never an id a client meant).

A backend of the other version cannot be trusted to refuse these itself: a v1.0 message
without a role would otherwise reach a v0.3 agent with a role somebody made up, and a
negative history length would vanish on the v0.3 bindings that read it as "all".
"""

from __future__ import annotations

import re
from functools import cache

from a2a.types import a2a_pb2 as pb
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import invalid_params


def check_message(msg: pb.Message, path: str) -> None:
    """A message a client sends: an id, a role, and at least one part with content."""
    if not msg.message_id:
        raise invalid_params(f"{path}.messageId is required", field=f"{path}.messageId")
    if msg.role == pb.ROLE_UNSPECIFIED:
        raise invalid_params(f"{path}.role is required (ROLE_USER or ROLE_AGENT)",
                             field=f"{path}.role")
    if not msg.parts:
        raise invalid_params(f"{path}.parts must hold at least one part",
                             field=f"{path}.parts")
    for i, part in enumerate(msg.parts):
        if part.WhichOneof("content") is None:
            raise invalid_params(f"{path}.parts[{i}] has no content (text, raw, url or data)",
                                 field=f"{path}.parts[{i}]")


def check_history_length(value: int, field: str) -> None:
    if value < 0:
        raise invalid_params(f"{field} must not be negative", field=field)


def check_request(op: str, request: ProtoMessage) -> None:
    """InvalidParams for a request no backend should see."""
    if isinstance(request, pb.SendMessageRequest):
        if not request.HasField("message"):
            raise invalid_params("message is required", field="message")
        check_message(request.message, "message")
        conf = request.configuration
        if conf.HasField("history_length"):
            check_history_length(conf.history_length, "configuration.historyLength")
    elif isinstance(request, pb.GetTaskRequest | pb.ListTasksRequest) \
            and request.HasField("history_length"):
        check_history_length(request.history_length, "historyLength")
    named = _NAMES_TASK.get(op)
    if named is not None and not getattr(request, named[0]):
        raise invalid_params(f"{named[1]} is required", field=named[1])
    for chain in _checked_fields(request.DESCRIPTOR):
        _check_chain(request, chain, "")


# Operations on one task: the field that names it (proto name, JSON name).
_NAMES_TASK = {ops.GET_TASK: ("id", "id"), ops.CANCEL: ("id", "id"),
               ops.SUBSCRIBE: ("id", "id"), ops.PUSH_CREATE: ("task_id", "taskId"),
               ops.PUSH_GET: ("task_id", "taskId"), ops.PUSH_LIST: ("task_id", "taskId"),
               ops.PUSH_DELETE: ("task_id", "taskId")}


# ---------------------------------------------------------------- enums and ids

# The control characters (Unicode Cc): C0, DEL and C1.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_Chain = tuple[FieldDescriptor, ...]  # the fields from a request down to a checked one


def is_id_field(f: FieldDescriptor) -> bool:
    """Whether a string field holds an id (`id`, `task_id`, `reference_task_ids`...)."""
    name: str = f.name
    return f.type == FieldDescriptor.TYPE_STRING and (
        name == "id" or name.endswith(("_id", "_ids")))


@cache
def _checked_fields(desc: Descriptor) -> tuple[_Chain, ...]:
    """Every enum field and id field reachable from a message type, as field chains
    (computed once per type: a call walks only the few chains its request has)."""
    return _chains(desc, frozenset({desc.full_name}))


def _chains(desc: Descriptor, seen: frozenset[str]) -> tuple[_Chain, ...]:
    out: list[_Chain] = []
    for f in desc.fields:
        if f.type == FieldDescriptor.TYPE_ENUM or is_id_field(f):
            out.append((f,))
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            sub = f.message_type
            if sub.GetOptions().map_entry or sub.full_name.startswith("google.protobuf.") \
                    or sub.full_name in seen:
                continue  # maps, Struct/Value/Timestamp hold neither; no loops
            out.extend((f, *chain) for chain in _chains(sub, seen | {sub.full_name}))
    return tuple(out)


def _check_chain(msg: ProtoMessage, chain: _Chain, path: str) -> None:
    f, rest = chain[0], chain[1:]
    where = f"{path}{f.json_name}"
    value = getattr(msg, f.name)
    if rest:
        if f.is_repeated:
            for i, item in enumerate(value):
                _check_chain(item, rest, f"{where}[{i}].")
        elif msg.HasField(f.name):
            _check_chain(value, rest, f"{where}.")
        return
    values = list(value) if f.is_repeated else [value]
    for i, item in enumerate(values):
        shown = f"{where}[{i}]" if f.is_repeated else where
        if f.type == FieldDescriptor.TYPE_ENUM:
            if f.enum_type.values_by_number.get(item) is None:
                raise invalid_params(f"{shown}: {item} is not a value of {f.enum_type.name}",
                                     field=shown)
        elif _CONTROL.search(item) is not None:
            raise invalid_params(f"{shown} must not hold control characters "
                                 f"(U+0000-U+001F, U+007F-U+009F)", field=shown)
