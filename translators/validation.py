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
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
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
    parts = msg.parts  # read once: each read of a upb field looks it up and wraps it
    if not parts:
        raise invalid_params(f"{path}.parts must hold at least one part",
                             field=f"{path}.parts")
    for i, part in enumerate(parts):
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
    elif isinstance(request, _WITH_HISTORY) and request.HasField("history_length"):
        check_history_length(request.history_length, "historyLength")
    named = ops.TASK_FIELD.get(op)
    if named is not None and not getattr(request, named[0]):
        raise invalid_params(f"{named[1]} is required", field=named[1])
    _check_fields(request, _plan(request.DESCRIPTOR), "")


# The requests with a top-level `historyLength` (built once: a union written inside
# isinstance() is a new object on every call).
_WITH_HISTORY = (pb.GetTaskRequest, pb.ListTasksRequest)


# ---------------------------------------------------------------- enums and ids

# The control characters (Unicode Cc): C0, DEL and C1.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_id_field(f: FieldDescriptor) -> bool:
    """Whether a string field holds an id (`id`, `task_id`, `reference_task_ids`...)."""
    name: str = f.name
    return f.type == FieldDescriptor.TYPE_STRING and (
        name == "id" or name.endswith(("_id", "_ids")))


@dataclass(frozen=True, slots=True)
class _Node:
    """A field the rules check, or a message field with such fields below it."""

    name: str
    json: str
    repeated: bool
    enum: EnumDescriptor | None = None  # an enum field: its enum
    below: Nodes | None = None  # a message field: the checked fields inside
    # A leaf's value that passes at once (a C call, no path made): an id that is
    # printable, a number the enum names; any other is for _check_value to judge.
    fine: Callable[[Any], bool] = str.isprintable


# A message type's checked fields by their descriptor, the key ListFields gives.
Nodes = dict[FieldDescriptor, _Node]


@cache
def _plan(desc: Descriptor) -> Nodes:
    """The enum and id fields reachable from a message type (found once per type: a call
    visits only the few fields its request has)."""
    return _nodes(desc, frozenset({desc.full_name}))


def _nodes(desc: Descriptor, seen: frozenset[str]) -> Nodes:
    out: Nodes = {}
    for f in desc.fields:
        repeated = bool(f.is_repeated)
        if f.type == FieldDescriptor.TYPE_ENUM:
            out[f] = _Node(f.name, f.json_name, repeated, enum=f.enum_type,
                           fine=frozenset(f.enum_type.values_by_number).__contains__)
        elif is_id_field(f):
            out[f] = _Node(f.name, f.json_name, repeated)
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            sub = f.message_type
            if sub.GetOptions().map_entry or sub.full_name.startswith("google.protobuf.") \
                    or sub.full_name in seen:
                continue  # maps, Struct/Value/Timestamp hold neither; no loops
            below = _nodes(sub, seen | {sub.full_name})
            if below:
                out[f] = _Node(f.name, f.json_name, repeated, below=below)
    return out


def _check_fields(msg: ProtoMessage, nodes: Nodes, path: str) -> None:
    # The fields set only, from one ListFields call (reading each field costs as much):
    # an id not set is empty and an enum not set is 0, both fine, and a message not set
    # holds nothing. In field number order: the first bad field is the one reported
    # (the A2A messages with two checked fields declare them in that order too).
    for fd, value in msg.ListFields():
        node = nodes.get(fd)
        if node is None:
            continue
        if node.below is not None:
            if node.repeated:
                for i, item in enumerate(value):
                    _check_fields(item, node.below, f"{path}{node.json}[{i}].")
            else:
                _check_fields(value, node.below, f"{path}{node.json}.")
        elif node.repeated:
            for i, item in enumerate(value):
                if not node.fine(item):
                    _check_value(node, item, f"{path}{node.json}[{i}]")
        elif not node.fine(value):
            _check_value(node, value, path + node.json)


def _check_value(node: _Node, value: int | str, where: str) -> None:
    if node.enum is not None:
        if node.enum.values_by_number.get(value) is None:
            raise invalid_params(f"{where}: {value} is not a value of {node.enum.name}",
                                 field=where)
    # isprintable() first: true for nearly every id, and it rules out every Cc.
    elif not str(value).isprintable() and _CONTROL.search(str(value)) is not None:
        raise invalid_params(f"{where} must not hold control characters "
                             f"(U+0000-U+001F, U+007F-U+009F)", field=where)
