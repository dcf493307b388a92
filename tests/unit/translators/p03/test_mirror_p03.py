"""The P03 object rules (translators/p03/objects.py RULES, copied by translators/p03/mirror.py).

The rules name what differs between a v0.3 message and its v1.0 counterpart; everything
else is copied by name. So: every name a rule mentions exists, no field of an object is
lost for want of a home (a new field in either proto fails here, not silently on the
wire), and every field copied by name comes back unchanged, both ways, whatever value it
holds (enum numbers a newer peer may send included).
"""

from __future__ import annotations

from typing import Any

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.translators.p03.test_roundtrip_p03 import SETTINGS
from translators.loss import LossPolicy, LossReport
from translators.p03 import objects
from translators.p03.mirror import Rule

PAIRS = [(v03.Message, pb.Message), (v03.TaskStatus, pb.TaskStatus),
         (v03.Artifact, pb.Artifact), (v03.Task, pb.Task),
         (v03.TaskStatusUpdateEvent, pb.TaskStatusUpdateEvent),
         (v03.TaskArtifactUpdateEvent, pb.TaskArtifactUpdateEvent),
         (v03.StreamResponse, pb.StreamResponse),
         (v03.SendMessageResponse, pb.SendMessageResponse)]


@pytest.mark.parametrize("rule", objects.RULES, ids=lambda r: r.p03.DESCRIPTOR.name)
def test_every_name_a_rule_mentions_exists(rule: Rule) -> None:
    p03 = rule.p03.DESCRIPTOR.fields_by_name
    p10 = rule.p10.DESCRIPTOR.fields_by_name
    assert set(rule.renames) <= set(p03)
    assert set(rule.renames.values()) <= set(p10)
    assert set(rule.to_p10) | rule.unsaid_p03 <= set(p03)
    assert set(rule.to_p03) | rule.unsaid_p10 <= set(p10)


@pytest.mark.parametrize(("p03", "p10"), PAIRS, ids=lambda c: c.DESCRIPTOR.full_name)
def test_every_object_field_has_a_home(p03: type[ProtoMessage], p10: type[ProtoMessage],
                                       ) -> None:
    assert objects.MIRRORS.to_p10.unmapped(p03.DESCRIPTOR, p10.DESCRIPTOR) == []
    assert objects.MIRRORS.to_p03.unmapped(p10.DESCRIPTOR, p03.DESCRIPTOR) == []


def test_a_field_without_a_home_is_reported() -> None:
    # `referenceTaskIds` has a rule (carried or reported); `final` is said by the stream's
    # end. Neither is silent, and nothing else is lost.
    msg = pb.Message(message_id="m", role=pb.ROLE_USER, reference_task_ids=["t0"],
                     parts=[pb.Part(text="hi")])
    loss = LossReport()
    out = objects.message_to_p03(msg, "status.message", loss)
    assert loss.dropped == ["status.message.referenceTaskIds"]
    assert out == v03.Message(message_id="m", role=v03.ROLE_USER, content=[v03.Part(text="hi")])


# ---------------------------------------------------------------- by name, both ways

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_json = st.one_of(_text, st.booleans(), st.integers(-9, 9).map(float))
_META = st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), _json, max_size=3)


def _scalar(f: FieldDescriptor) -> st.SearchStrategy[Any]:
    if f.type == FieldDescriptor.TYPE_STRING:
        return _text
    if f.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if f.type == FieldDescriptor.TYPE_ENUM:
        return st.integers(0, 40)  # numbers neither version names travel too
    raise AssertionError(f"no strategy for {f.full_name}")


@st.composite
def by_name(draw: st.DrawFn, cls: type[ProtoMessage], depth: int = 0) -> ProtoMessage:
    """A message with any of its fields set, as the rules' by-name copy sees them; parts
    (restructured whole, tested in test_roundtrip_p03) are text parts."""
    msg = cls()
    desc: Descriptor = msg.DESCRIPTOR
    if desc.name == "Part":
        return cls(text=draw(_text))
    # The answers' payload: exactly one (an empty one is an error, not a translation).
    picked = {o.name: draw(st.sampled_from(list(o.fields))) for o in desc.oneofs}
    for f in desc.fields:
        oneof = f.containing_oneof
        if oneof is not None and picked[oneof.name] is not f:
            continue
        if f.name == "final" or (oneof is None and not draw(st.booleans())):
            continue  # `final` is the encoder's call: see the tests below
        kind = f.message_type.full_name if f.message_type else ""
        if kind == "google.protobuf.Struct":
            getattr(msg, f.name).update(draw(_META))
        elif kind == "google.protobuf.Timestamp":
            getattr(msg, f.name).seconds = draw(st.integers(0, 2**33))
        elif f.message_type is not None and depth < 3:
            sub = cls_of(msg, f)
            values = draw(st.lists(by_name(sub, depth + 1), max_size=2)) if f.is_repeated \
                else [draw(by_name(sub, depth + 1))]
            for value in values:
                (getattr(msg, f.name).add() if f.is_repeated
                 else getattr(msg, f.name)).CopyFrom(value)
        elif f.message_type is None and f.is_repeated:
            getattr(msg, f.name).extend(draw(st.lists(_scalar(f), max_size=2)))
        elif f.message_type is None:
            setattr(msg, f.name, draw(_scalar(f)))
    return msg


def cls_of(msg: ProtoMessage, f: FieldDescriptor) -> type[ProtoMessage]:
    module = v03 if msg.DESCRIPTOR.full_name.startswith("a2a.") else pb
    cls: type[ProtoMessage] = getattr(module, f.message_type.name)
    return cls


@SETTINGS
@given(st.data())
def test_p03_objects_come_back_from_v10(data: st.DataObject) -> None:
    for p03, _ in PAIRS[-2:]:  # the answers hold every other object
        msg = data.draw(by_name(p03))
        loss = LossReport()
        if isinstance(msg, v03.StreamResponse):
            final = data.draw(st.booleans())
            if msg.HasField("status_update"):
                msg.status_update.final = final
            there = objects.stream_response_to_p10(msg, "", loss)
            back: ProtoMessage = objects.stream_response_to_p03(there, final, "", loss)
        else:
            back = objects.send_response_to_p03(
                objects.send_response_to_p10(msg, "", loss), "", loss)
        assert back == msg
        assert loss.dropped == []


@SETTINGS
@given(st.data())
def test_p10_objects_come_back_from_v03(data: st.DataObject) -> None:
    for _, p10 in PAIRS[-2:]:
        msg = data.draw(by_name(p10))
        # What only v1.0 says (referenceTaskIds) travels in v0.3 metadata under `carry`.
        loss = LossReport(policy=LossPolicy.CARRY)
        if p10 is pb.StreamResponse:
            back: ProtoMessage = objects.stream_response_to_p10(
                objects.stream_response_to_p03(msg, False, "", loss), "", loss)
        else:
            back = objects.send_response_to_p10(
                objects.send_response_to_p03(msg, "", loss), "", loss)
        assert back == msg
        assert loss.dropped == []
