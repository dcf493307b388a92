"""translators/protojson.py against google.protobuf.json_format, the oracle: on random
messages of every A2A type of both versions, the same ProtoJSON out and the same message
back in; on random JSON, the same message or an error where json_format errs."""

from __future__ import annotations

import math
import string
from typing import Any

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translators.p03.json import P03
from translators.protojson import P10, Codec
from translators.protojson_scalars import ProtoJsonError, integral

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TYPES = [m for mod in (pb, v03) for m in mod.DESCRIPTOR.message_types_by_name.values()]

json_leaves = (st.none() | st.booleans() | st.integers(-(2**40), 2**40)
               | st.floats(allow_nan=False, allow_infinity=False, width=32)
               | st.text(max_size=6))
json_any = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(string.ascii_letters, max_size=4), inner,
                                          max_size=3), max_leaves=6)


def _scalar(f: FieldDescriptor) -> st.SearchStrategy[Any]:
    if f.type == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in f.enum_type.values])
    return {FieldDescriptor.TYPE_STRING: st.text(max_size=6),
            FieldDescriptor.TYPE_BYTES: st.binary(max_size=6),
            FieldDescriptor.TYPE_BOOL: st.booleans(),
            FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1)}[f.type]


@st.composite
def messages(draw: st.DrawFn, desc: Descriptor, depth: int = 0) -> Message:
    cls: Any = {m.full_name: m for m in TYPES}.get(desc.full_name)
    msg = (pb if desc.file is pb.DESCRIPTOR else v03).__dict__.get(desc.name)() \
        if cls is not None else None
    assert msg is not None
    _fill(draw, msg, depth)
    return msg  # type: ignore[no-any-return]


def _fill(draw: st.DrawFn, msg: Any, depth: int) -> None:
    desc = msg.DESCRIPTOR
    if desc.full_name in ("google.protobuf.Struct", "google.protobuf.Value"):
        P10._into(msg, draw(st.dictionaries(st.text(string.ascii_letters, max_size=3), json_any,
                                            max_size=2) if desc.name == "Struct" else json_any),
                  "x", 0)
        return
    if desc.full_name == "google.protobuf.Timestamp":
        msg.seconds = draw(st.integers(0, 2**33))
        msg.nanos = draw(st.sampled_from([0, 1_000_000, 123_000, 7]))
        return
    for f in desc.fields:
        if not draw(st.booleans()) or (f.message_type and depth > 3):
            continue
        is_map = bool(f.message_type and f.message_type.GetOptions().map_entry)
        if is_map:
            value_field = f.message_type.fields_by_name["value"]
            for key in draw(st.lists(st.text(string.ascii_letters, min_size=1, max_size=3),
                                     max_size=2, unique=True)):
                target = getattr(msg, f.name)
                if value_field.message_type:
                    _fill(draw, target[key], depth + 1)
                else:
                    target[key] = draw(_scalar(value_field))
        elif f.is_repeated:
            for _ in range(draw(st.integers(0, 2))):
                if f.message_type:
                    _fill(draw, getattr(msg, f.name).add(), depth + 1)
                else:
                    getattr(msg, f.name).append(draw(_scalar(f)))
        elif f.message_type:
            sub = getattr(msg, f.name)
            sub.SetInParent()
            _fill(draw, sub, depth + 1)
        else:
            setattr(msg, f.name, draw(_scalar(f)))


def _oracle_dump(msg: Message) -> Any:
    return integral(json_format.MessageToDict(msg))


def _finite(msg: Message) -> bool:
    return "nan" not in str(msg).lower() and "inf" not in str(msg).lower()


@SETTINGS
@given(st.sampled_from(TYPES).flatmap(messages))
def test_dump_and_parse_agree_with_json_format(msg: Message) -> None:
    codec = P10 if msg.DESCRIPTOR.file is pb.DESCRIPTOR else P03
    dumped = codec.dump(msg)
    oracle = _oracle_dump(msg)
    oracle.update({k: v for k, v in dumped.items() if k not in oracle})  # ListTasks presence
    assert dumped == oracle
    assert codec.parse(dumped, type(msg)) == json_format.ParseDict(
        dumped, type(msg)(), ignore_unknown_fields=True)


def _junk(desc: Descriptor) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from([f.json_name for f in desc.fields] + [f.name for f in desc.fields]
                           + ["unknownKey"])
    return st.dictionaries(keys, json_any, max_size=4)


@SETTINGS
@given(st.sampled_from([d for d in TYPES if d.fields]).flatmap(
    lambda d: st.tuples(st.just(d), _junk(d))))
def test_junk_is_refused_where_json_format_refuses_it(case: tuple[Descriptor, dict[str, Any]],
                                                     ) -> None:
    desc, data = case
    cls: Any = (pb if desc.file is pb.DESCRIPTOR else v03).__dict__[desc.name]
    codec = Codec()
    try:
        expected = json_format.ParseDict(data, cls(), ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, AttributeError, ValueError):
        with pytest.raises(ProtoJsonError):
            codec.parse(data, cls)
        return
    try:
        got = codec.parse(data, cls)
    except ProtoJsonError:
        # Stricter by design: json_format reads a message field given a list or a string
        # leniently (as an empty message), this codec refuses it; and integral floats
        # for enums and booleans for integers.
        return
    assert got == expected


def test_values_keep_integers_and_refuse_non_finite_numbers() -> None:
    msg = pb.Message(message_id="m")
    P10._into(msg.metadata, {"k": 1, "f": 1.5, "big": 2.0**60}, "m", 0)
    assert P10.dump(msg)["metadata"] == {"k": 1, "f": 1.5, "big": 2.0**60}
    msg.metadata["bad"] = math.inf
    with pytest.raises(ProtoJsonError):
        P10.dump(msg)


def test_negative_zero_keeps_its_sign_both_ways() -> None:
    """-0.0 in a Struct was written as the integer 0 (`int(-0.0)`), so a round trip
    through JSON lost its sign (found by test_any_send_request_decodes_back)."""
    msg = pb.Message(message_id="m")
    P10._into(msg.metadata, {"z": -0.0, "n": [-0.0, 0.0, -3.0]}, "m", 0)
    dumped = P10.dump(msg)["metadata"]
    assert math.copysign(1.0, dumped["z"]) == -1.0
    assert [math.copysign(1.0, x) for x in dumped["n"]] == [-1.0, 1.0, -1.0]
    assert dumped["n"][1:] == [0, -3] and isinstance(dumped["n"][2], int)
    again = pb.Message(message_id="m")
    P10._into(again.metadata, dumped, "m", 0)
    assert math.copysign(1.0, again.metadata["z"]) == -1.0
    assert math.copysign(1.0, integral(-0.0)) == -1.0 and integral(-2.0) == -2


def test_v03_codec_reads_the_v10_spelling_and_naive_timestamps() -> None:
    status = P03.parse({"state": "TASK_STATE_CANCELED", "timestamp": "2026-01-02T03:04:05"},
                       v03.TaskStatus)
    assert status.state == v03.TASK_STATE_CANCELLED
    assert status.timestamp.ToJsonString() == "2026-01-02T03:04:05Z"
    with pytest.raises(ProtoJsonError):  # a v1.0 timestamp must say its zone
        P10.parse({"timestamp": "2026-01-02T03:04:05"}, pb.TaskStatus)
