"""ProtoJSON at the edges of the canonical model (reference §3.0).

The canonical model is the v1.0 protobuf messages; P10 dicts are their ProtoJSON form
(and P03 dicts that of the v0.3 messages, in v0.3 REST bodies). This module, with its
scalars in protojson_scalars.py, is the only place that converts between a message and
its ProtoJSON, so leniency on input (unknown fields ignored, spec §5.7) and the exceptions
to default omission live here.

`google.protobuf.json_format` walks the descriptors again on every call and dominated the
gateway's CPU. This codec walks each message type's descriptor once, into a plan of one
small converter per field, and gives the same results as `json_format.ParseDict(...,
ignore_unknown_fields=True)` and `MessageToDict` for the field kinds the A2A protos use —
string, bytes, bool, int32, enums, messages, maps, Timestamp, Struct, Value — with two
deliberate differences: a message field given anything but an object is an error (not
read leniently as an empty message), and integral numbers in Struct/Value come back as
integers (protobuf holds every number there as a double, so `{"k": 1}` would otherwise
come back as `{"k": 1.0}`; exact below 2**53). A message type with any other field kind
is handed to json_format. tests/unit/translators/test_protojson.py holds the codec to json_format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from translators.errors import A2AError, a2a_error
from translators.protojson_scalars import (
    ProtoJsonError,
    UnknownEnumName,
    Where,
    dump_bytes_b64,
    dump_value,
    entry,
    enum_dumper,
    enum_parser,
    parse_bool,
    parse_bytes,
    parse_int32,
    parse_string,
    parse_timestamp_into,
    path_text,
    timestamp_text,
)

M = TypeVar("M", bound=ProtoMessage)

_MAX_DEPTH = 100  # json_format's recursion limit
_STRUCT, _VALUE, _LIST, _TIMESTAMP = ("google.protobuf.Struct", "google.protobuf.Value",
                                      "google.protobuf.ListValue", "google.protobuf.Timestamp")
_WELL_KNOWN = frozenset({_STRUCT, _VALUE, _LIST, _TIMESTAMP})
_HAS_ZONE = re.compile(r"(?:[Zz]|[+-]\d\d:?\d\d)\Z")
_SCALARS = frozenset({FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES,
                      FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_INT32,
                      FieldDescriptor.TYPE_ENUM})

# Fields ProtoJSON would omit at their default but the spec wants present: ListTasksResponse
# fields are all REQUIRED and nextPageToken MUST be present even when empty (§3.0). Only
# the top level: the tasks inside keep default omission (absent artifacts mean "not
# included", §3.1.4).
_ALWAYS_PRESENT: dict[str, dict[str, Any]] = {
    "lf.a2a.v1.ListTasksResponse": {"tasks": [], "nextPageToken": "", "pageSize": 0,
                                    "totalSize": 0},
}


# ---------------------------------------------------------------- plans


@dataclass
class _Field:
    name: str
    json: str
    repeated: bool
    map_value: _Field | None  # the value's plan for a map field
    oneof: str | None
    message: Descriptor | None
    parse: Callable[[Any], Any] | None = None  # scalars
    dump: Callable[[Any], Any] | None = None
    plan: _Plan | None = None  # the message's plan, once first needed
    # Worked out once from the above, read for every field of every call:
    scalar: bool = False  # one scalar (parse set, not repeated): the common case
    as_is: bool = False  # one string: a str read or dumped is taken as it is
    null_value: bool = False  # one google.protobuf.Value: JSON null sets its null_value
    out: Callable[[Any], Any] = str  # the field's value -> its ProtoJSON (Codec._dumper)


@dataclass
class _Plan:
    by_key: dict[str, _Field] = field(default_factory=dict)
    by_number: dict[int, _Field] = field(default_factory=dict)
    generic: bool = False  # a field kind this codec does not handle: json_format does
    well_known: str | None = None  # Timestamp, Struct, Value, ListValue: their own forms
    # The fields by their descriptor, as ListFields gives them: reading a descriptor's
    # number costs more than the look-up (by_number stays for a descriptor not seen).
    by_desc: dict[FieldDescriptor, _Field] = field(default_factory=dict)
    always_present: dict[str, Any] | None = None  # _ALWAYS_PRESENT's entry


class Codec:
    """ProtoJSON for one family of messages. ``enum_aliases`` maps (enum full name, alias)
    to the name it stands for; ``naive_timestamps`` reads a timestamp without a zone as
    UTC (v0.3 peers send such, reference §3.4); ``strict_enum_names`` refuses an enum
    name it does not know (a client's role or filter must not silently become
    "unspecified"; answers stay lenient: a newer peer may add states)."""

    def __init__(self, enum_aliases: dict[tuple[str, str], str] | None = None,
                 naive_timestamps: bool = False, strict_enum_names: bool = False) -> None:
        self._aliases = enum_aliases or {}
        self._naive = naive_timestamps
        self._strict_enums = strict_enum_names
        # By descriptor (one object per message type): a descriptor's full_name costs
        # more to read than the dictionary lookup, and every message of every call is
        # looked up here.
        self._plans: dict[Descriptor, _Plan] = {}

    # ------------------------------------------------------------ plans

    def _field(self, f: FieldDescriptor) -> _Field:
        is_map = bool(f.message_type and f.message_type.GetOptions().map_entry)
        plan = _Field(f.name, f.json_name, f.is_repeated and not is_map,
                      None, f.containing_oneof.name if f.containing_oneof else None,
                      None if is_map else f.message_type)
        if is_map:
            plan.map_value = self._field(f.message_type.fields_by_name["value"])
        elif f.type == FieldDescriptor.TYPE_ENUM:
            aliases = {a: n for (e, a), n in self._aliases.items() if e == f.enum_type.full_name}
            plan.parse, plan.dump = enum_parser(f, aliases), enum_dumper(f)
        elif f.type == FieldDescriptor.TYPE_BYTES:
            plan.parse, plan.dump = parse_bytes, dump_bytes_b64
        elif f.type == FieldDescriptor.TYPE_STRING:
            plan.parse, plan.dump = parse_string, str
            plan.as_is = not plan.repeated
        elif f.type == FieldDescriptor.TYPE_BOOL:
            plan.parse, plan.dump = parse_bool, bool
        elif f.type == FieldDescriptor.TYPE_INT32:
            plan.parse, plan.dump = parse_int32, int
        plan.scalar = plan.parse is not None and not plan.repeated
        plan.null_value = (plan.message is not None and not plan.repeated
                           and plan.message.full_name == _VALUE)
        plan.out = self._dumper(plan)
        return plan

    def _dumper(self, f: _Field) -> Callable[[Any], Any]:
        """What turns a field's value (as ListFields gives it) into its ProtoJSON: the
        kind of field is decided here once, not for every value dumped."""
        if f.map_value is not None:
            v = f.map_value
            return lambda value: {str(k): v.out(x) for k, x in value.items()}
        if f.message is None:
            assert f.dump is not None
            one = f.dump
            return (lambda value: [one(x) for x in value]) if f.repeated else one

        def first(value: Any) -> Any:
            # A message field's plan may not exist yet while plans are made (types nest
            # and recur): the dumper is finished at its first value, then called direct.
            f.out = self._message_dumper(f.plan or self._sub_plan(f), f.repeated)
            return f.out(value)
        return first

    def _message_dumper(self, plan: _Plan, repeated: bool) -> Callable[[Any], Any]:
        one = partial(self._dump, plan)  # no Python frame of its own per message
        return (lambda values: list(map(one, values))) if repeated else one

    def _plan(self, desc: Descriptor) -> _Plan:
        plan = self._plans.get(desc)
        if plan is not None:
            return plan
        plan = _Plan()
        if desc.full_name in _WELL_KNOWN:
            plan.well_known = desc.full_name
            self._plans[desc] = plan
            return plan
        for f in desc.fields:
            kind_ok = f.type in _SCALARS or f.type == FieldDescriptor.TYPE_MESSAGE
            if not kind_ok or f.is_extension:
                plan.generic = True
            fp = self._field(f)
            plan.by_key[f.json_name] = plan.by_key.get(f.json_name, fp)
            plan.by_key.setdefault(f.name, fp)
            plan.by_number[f.number] = fp
            plan.by_desc[f] = fp
        plan.always_present = _ALWAYS_PRESENT.get(desc.full_name)
        self._plans[desc] = plan
        return plan

    # ------------------------------------------------------------ parse

    def parse(self, data: Any, cls: type[M]) -> M:
        msg: M = cls()
        self._into(msg, data, cls.DESCRIPTOR.name, 0)
        return msg

    def _sub_plan(self, f: _Field) -> _Plan:
        assert f.message is not None
        plan = f.plan = self._plan(f.message)
        return plan

    def _into(self, msg: ProtoMessage, data: Any, path: Where, depth: int,
              plan: _Plan | None = None) -> None:
        if depth >= _MAX_DEPTH:
            raise ProtoJsonError(f"{path_text(path)}: nested deeper than {_MAX_DEPTH} levels")
        if plan is None:
            plan = self._plan(msg.DESCRIPTOR)
        name = plan.well_known
        if name is None:  # an A2A message: the common case first
            if plan.generic:
                json_format.ParseDict(data, msg, ignore_unknown_fields=True)
                return
            if not isinstance(data, dict):
                raise ProtoJsonError(f"{path_text(path)} must be an object")
            self._fields(msg, plan, data, path, depth)
        elif name == _TIMESTAMP:
            self._timestamp(msg, data, path)
        elif name == _STRUCT:
            self._struct(msg, data, path, depth)
        elif name == _VALUE:
            self._value(msg, data, path, depth)
        else:
            self._list(msg, data, path, depth)

    def _fields(self, msg: ProtoMessage, plan: _Plan, data: dict[str, Any], path: Where,
                depth: int) -> None:
        oneofs: set[str] | None = None  # made for the few messages that set one
        by_key = plan.by_key
        for key, value in data.items():
            f = by_key.get(key)
            if f is None:
                continue  # unknown fields are ignored (spec §5.7)
            if value is None:
                if f.null_value:
                    getattr(msg, f.name).null_value = 0
                else:
                    msg.ClearField(f.name)
                continue
            if f.oneof is not None:
                if oneofs is None:
                    oneofs = set()
                elif f.oneof in oneofs:
                    raise ProtoJsonError(f"{path_text(path)}: more than one field of oneof "
                                         f"{f.oneof}")
                oneofs.add(f.oneof)
            if f.scalar:  # the common case first
                try:  # a str for a string field is set as it is (parse_string's answer)
                    setattr(msg, f.name, value if f.as_is and value.__class__ is str
                            else f.parse(value))  # type: ignore[misc]
                except UnknownEnumName:
                    self._unknown_enum((path, key), value)
                except (ProtoJsonError, ValueError, TypeError) as exc:
                    raise ProtoJsonError(f"{path_text(path)}.{key}: {exc}") from None
            elif f.map_value is not None:
                self._map(msg, f, value, (path, key), depth)
            elif f.repeated:
                self._repeated(msg, f, value, (path, key), depth)
            else:
                sub = getattr(msg, f.name)
                sub.SetInParent()
                self._into(sub, value, (path, key), depth + 1, f.plan or self._sub_plan(f))

    def _repeated(self, msg: ProtoMessage, f: _Field, value: Any, where: Where,
                  depth: int) -> None:
        if not isinstance(value, list):
            raise ProtoJsonError(f"{path_text(where)} must be an array")
        target: Any = getattr(msg, f.name)
        del target[:]
        plan = None if f.message is None else f.plan or self._sub_plan(f)
        for i, item in enumerate(value):
            if plan is not None:
                if item is None and plan.well_known != _VALUE:
                    raise ProtoJsonError(f"{path_text(where)}[{i}] is null")
                self._into(target.add(), item, (where, "[", i), depth + 1, plan)
            else:
                assert f.parse is not None
                if item is None:
                    raise ProtoJsonError(f"{path_text(where)}[{i}] is null")
                try:
                    target.append(f.parse(item))
                except UnknownEnumName:
                    self._unknown_enum((where, "[", i), item)
                    continue
                except (ProtoJsonError, ValueError, TypeError) as exc:
                    raise ProtoJsonError(f"{path_text(where)}[{i}]: {exc}") from None

    def _map(self, msg: ProtoMessage, f: _Field, value: Any, where: Where, depth: int) -> None:
        if not isinstance(value, dict):
            raise ProtoJsonError(f"{path_text(where)} must be an object")
        target: Any = getattr(msg, f.name)
        target.clear()
        v = f.map_value
        assert v is not None
        for key, item in value.items():
            if v.message is not None:
                self._into(entry(target, key, where), item, (where, key), depth + 1)
            else:
                assert v.parse is not None
                try:  # a key protobuf cannot hold is a ValueError here too
                    target[key] = v.parse(item)
                except UnknownEnumName:
                    self._unknown_enum((where, key), item)
                    continue
                except (ProtoJsonError, ValueError, TypeError) as exc:
                    raise ProtoJsonError(f"{path_text(where)}.{key}: {exc}") from None

    def _unknown_enum(self, where: Where, value: Any) -> None:
        if self._strict_enums:  # the name shown cut to 64 characters
            raise ProtoJsonError(f"{path_text(where)}: {value[:64]!r} is not a value this "
                                 f"field can hold")

    def _timestamp(self, msg: Any, data: Any, path: Where) -> None:
        text = parse_string(data)
        if self._naive and not _HAS_ZONE.search(text.strip()):
            text = text.strip() + "Z"
        try:
            parse_timestamp_into(msg, text)
        except ValueError as exc:
            raise ProtoJsonError(f"{path_text(path)}: {exc}") from None

    def _struct(self, msg: Any, data: Any, path: Where, depth: int) -> None:
        if not isinstance(data, dict):
            raise ProtoJsonError(f"{path_text(path)} must be an object")
        msg.Clear()
        fields = msg.fields
        for key, item in data.items():
            self._value(entry(fields, key, path), item, (path, key), depth + 1)

    def _list(self, msg: Any, data: Any, path: Where, depth: int) -> None:
        if not isinstance(data, list):
            raise ProtoJsonError(f"{path_text(path)} must be an array")
        msg.ClearField("values")
        values = msg.values
        for i, item in enumerate(data):
            self._value(values.add(), item, (path, "[", i), depth + 1)

    def _value(self, msg: Any, data: Any, path: Where, depth: int) -> None:
        if depth >= _MAX_DEPTH:
            raise ProtoJsonError(f"{path_text(path)}: nested deeper than {_MAX_DEPTH} levels")
        if isinstance(data, dict):
            self._struct(msg.struct_value, data, path, depth)
        elif isinstance(data, list):
            self._list(msg.list_value, data, path, depth)
        elif data is None:
            msg.null_value = 0
        elif isinstance(data, bool):
            msg.bool_value = data
        elif isinstance(data, str):
            try:
                msg.string_value = data
            except ValueError:  # a lone surrogate: JSON can escape one, UTF-8 cannot hold it
                raise ProtoJsonError(f"{path_text(path)}: the string is not valid "
                                     f"Unicode") from None
        elif isinstance(data, int | float):
            try:
                msg.number_value = data
            except OverflowError:
                raise ProtoJsonError(f"{path_text(path)}: number out of range") from None
        else:
            raise ProtoJsonError(f"{path_text(path)}: unexpected {type(data).__name__}")

    # ------------------------------------------------------------ dump

    def dump(self, msg: ProtoMessage) -> dict[str, Any]:
        plan = self._plan(msg.DESCRIPTOR)
        out = self._dump(plan, msg)
        if not isinstance(out, dict):
            raise ProtoJsonError(f"{msg.DESCRIPTOR.full_name} has no object form")
        if plan.always_present is not None:
            for key, default in plan.always_present.items():
                out.setdefault(key, list(default) if isinstance(default, list) else default)
        return out

    def _dump(self, plan: _Plan, msg: Any) -> Any:
        name = plan.well_known
        if name is not None:
            if name == _TIMESTAMP:
                return timestamp_text(msg)
            if name == _STRUCT:
                return {k: dump_value(v) for k, v in msg.fields.items()}
            if name == _VALUE:
                return dump_value(msg)
            return [dump_value(v) for v in msg.values]  # ListValue
        if plan.generic:
            return json_format.MessageToDict(msg)
        out: dict[str, Any] = {}
        by_desc = plan.by_desc
        for fd, value in msg.ListFields():
            f = by_desc.get(fd) or plan.by_number[fd.number]
            out[f.json] = value if f.as_is else f.out(value)
        return out


P10 = Codec()
P10_CLIENT = Codec(strict_enum_names=True)
CLIENT_FAULT = "InvalidParamsError"


def parse_p10(data: Any, cls: type[M], *, error: str = CLIENT_FAULT) -> M:
    """A v1.0 message from its ProtoJSON; bad shapes become ``error`` (InvalidParams on
    requests, InvalidAgentResponse on what a backend sent). A client's request
    (InvalidParams) is read with enum names strict, a backend's answer leniently."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise a2a_error(error, f"expected a JSON object for {cls.DESCRIPTOR.name}")
    try:
        return (P10_CLIENT if error == CLIENT_FAULT else P10).parse(data, cls)
    except (ProtoJsonError, json_format.ParseError) as exc:
        raise a2a_error(error, f"{cls.DESCRIPTOR.name}: {exc}") from None


def dump_p10(msg: ProtoMessage) -> dict[str, Any]:
    return P10.dump(msg)


def reclassify(err: A2AError, *, as_name: str = "InvalidAgentResponseError") -> A2AError:
    """A translation failure on something a backend sent is the backend's fault."""
    if err.kind.name in ("InvalidParamsError", "InvalidRequestError"):
        return a2a_error(as_name, f"backend response: {err.message}")
    return err
