"""Every enum-valued field of the requests of the six dialects, found in the protos and
the translators' tables (not listed by hand), with the request that carries it.

A site is one field in one dialect: where it sits in that dialect's request, the names
and numbers it can hold there, and whether 0 / the unspecified name is refused (the
field is REQUIRED in the v1.0 proto: a message's role). ProtoJSON dialects (v1.0
JSON-RPC and REST, v0.3 REST) take names and numbers; gRPC numbers only; v0.3 JSON-RPC
(J03) its own lowercase names from translators/j03, plus a part's `kind`, the J03
discriminator that names a member of the v0.3 Part oneof.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from google.api import field_behavior_pb2
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from tests.fuzz.fuzz_documents import GRPC_METHODS, SERVICE_FILES, V03, V10, GrpcMethod, grpc_method
from translators import operations as ops
from translators.j03.objects import ROLE_J03_TO_P10, STATE_J03_TO_P10
from translators.rest_routes import route_for

JSONRPC, REST, GRPC = "JSONRPC", "HTTP+JSON", "GRPC"
DIALECTS = tuple((b, v) for b in (JSONRPC, REST, GRPC) for v in (V03, V10))
Path = tuple[str | int, ...]

# The J03 names of each proto enum a v0.3 request carries (J03 has no numbers).
J03_NAMES: dict[str, dict[str, str]] = {"a2a.v1.Role": ROLE_J03_TO_P10,
                                        "a2a.v1.TaskState": STATE_J03_TO_P10}

# One valid request per (shape, operation) for every operation that has an enum field;
# a site of an operation missing here fails loudly (KeyError) when a proto adds one.
_P10_SEND = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
_BASES: dict[tuple[str, str], dict[str, Any]] = {
    ("p10", ops.SEND): _P10_SEND, ("p10", ops.STREAM): _P10_SEND, ("p10", ops.LIST_TASKS): {},
    ("p03", ops.SEND): {"message": {"messageId": "m-1", "role": "ROLE_USER",
                                    "content": [{"text": "hi"}]}},
    ("j03", ops.SEND): {"message": {"kind": "message", "messageId": "m-1", "role": "user",
                                    "parts": [{"kind": "text", "text": "hi"}]}},
}
for _shape in ("p03", "j03"):
    _BASES[(_shape, ops.STREAM)] = _BASES[(_shape, ops.SEND)]


@dataclass(frozen=True)
class Site:
    binding: str
    version: str
    op: str
    path: Path  # JSON keys (proto field names on gRPC) from the request to the field
    names: dict[str, int | None]  # the names it takes, and their numbers
    numbers: frozenset[int] | None  # the numbers it takes (None: names only)
    required: bool = False  # 0 is refused: the v1.0 field is REQUIRED
    # Names of the same family the base request cannot carry (other Part kinds): never
    # drawn as unknown, never as valid.
    avoid: frozenset[str] = frozenset()
    courtesy: dict[str, int] = field(default_factory=dict)  # also read, case-blind (REST)

    @property
    def shape(self) -> str:
        return "j03" if (self.binding, self.version) == (JSONRPC, V03) else (
            "p10" if self.version == V10 else "p03")

    @property
    def in_query(self) -> bool:
        return self.binding == REST and not route_for(self.op, self.version).body

    def __repr__(self) -> str:
        where = ".".join(map(str, self.path))
        return f"{self.binding} v{self.version} {self.op} {where}"


def _enum_chains(desc: Descriptor, seen: frozenset[str]) -> list[tuple[FieldDescriptor, ...]]:
    out: list[tuple[FieldDescriptor, ...]] = []
    for f in desc.fields:
        if f.type == FieldDescriptor.TYPE_ENUM:
            out.append((f,))
        elif f.type == FieldDescriptor.TYPE_MESSAGE and not f.message_type.GetOptions(
                ).map_entry and f.message_type.full_name not in seen \
                and not f.message_type.full_name.startswith("google.protobuf."):
            sub = f.message_type
            out += [(f, *c) for c in _enum_chains(sub, seen | {sub.full_name})]
    return out


def _required_in_v10(f: FieldDescriptor) -> bool:
    """Whether the v1.0 field of the same message and name is REQUIRED."""
    message = SERVICE_FILES[V10].message_types_by_name.get(f.containing_type.name)
    v10 = message.fields_by_name.get(f.name) if message is not None else None
    behaviors = v10.GetOptions().Extensions[field_behavior_pb2.field_behavior] if v10 else []
    return field_behavior_pb2.REQUIRED in behaviors


# v0.3 gRPC method name → the canonical operation name (the table's grpc_v03 column).
_V03_OPS = {op.grpc_v03: op.name for op in ops.OPERATIONS if op.grpc_v03}


def _op_of(method: GrpcMethod) -> str:
    return method.name if method.version == V10 else _V03_OPS[method.name]


def _sites() -> tuple[Site, ...]:
    out: list[Site] = []
    for method in GRPC_METHODS:
        op, version = _op_of(method), method.version
        for chain in _enum_chains(method.request, frozenset({method.request.full_name})):
            enum = chain[-1].enum_type
            names: dict[str, int | None] = {v.name: v.number for v in enum.values}
            numbers = frozenset(v.number for v in enum.values)
            required = _required_in_v10(chain[-1])
            json_path = tuple(f.json_name for f in chain)
            out.append(Site(GRPC, version, op, tuple(f.name for f in chain), {},
                            numbers, required))
            courtesy = {}
            if enum.full_name == "lf.a2a.v1.TaskState" and route_for(op, V10).query:
                # REST query values may be spelled the v0.3 way (`working`).
                courtesy = {j03: names[p10] or 0 for j03, p10 in STATE_J03_TO_P10.items()}
            out.append(Site(REST, version, op, json_path, names, numbers, required,
                            courtesy=courtesy if version == V10 else {}))
            if version == V10:
                out.append(Site(JSONRPC, V10, op, json_path, names, numbers, required))
            else:
                j03 = {name: names.get(p10) for name, p10 in J03_NAMES[enum.full_name].items()}
                out.append(Site(JSONRPC, V03, op, json_path, j03, None, required))
    # J03's part `kind` names a member of the v0.3 Part oneof; the base part is text.
    kinds = {f.name for f in SERVICE_FILES[V03].message_types_by_name["Part"].oneofs[0].fields}
    for op in (ops.SEND, ops.STREAM):
        out.append(Site(JSONRPC, V03, op, ("message", "parts", 0, "kind"), {"text": None},
                        None, avoid=frozenset(kinds - {"text"})))
    return tuple(out)


SITES = _sites()


def as_read(site: Site, value: str | int) -> str | int:
    """The value the gateway reads: a query parameter's last comma-separated item,
    stripped (README "HTTP+JSON"; reference §11.5)."""
    return value.split(",")[-1].strip() if site.in_query and isinstance(value, str) else value


def expected_ok(site: Site, value: str | int) -> bool:
    """Whether the value must pass (else: InvalidParams in the caller's dialect)."""
    value = as_read(site, value)
    if isinstance(value, int):
        if site.numbers is None or value not in site.numbers:
            return False
        number: int | None = value
    elif value in site.names:
        number = site.names[value]
    elif value.lower() in site.courtesy:
        number = site.courtesy[value.lower()]
    else:
        return False
    return not (site.required and number == 0)


def json_request(site: Site, value: Any) -> dict[str, Any]:
    """The site's operation's valid request in its shape, the field set to ``value``."""
    doc = copy.deepcopy(_BASES[(site.shape, site.op)])
    target: Any = doc
    for key in site.path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[site.path[-1]] = value
    return doc


def grpc_request(site: Site, number: int) -> tuple[GrpcMethod, bytes]:
    method = grpc_method(site.version, site.op)
    msg: ProtoMessage = message_factory.GetMessageClass(method.request)()
    json_format.ParseDict(_BASES[("p10" if site.version == V10 else "p03", site.op)], msg)
    target: Any = msg
    for name in site.path[:-1]:
        target = getattr(target, str(name))
    setattr(target, str(site.path[-1]), number)
    return method, msg.SerializeToString()
