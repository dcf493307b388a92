"""translators/validation.py walks the fields a request has set, in field number order
(ListFields); the first bad field it meets is the one the error names. These hold that
order to the one the fields are declared in, so which field is named stays the same."""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf.descriptor import Descriptor

from translators.errors import A2AError
from translators.validation import _plan, check_request


def _messages() -> list[Descriptor]:
    found: dict[str, Descriptor] = {}

    def walk(desc: Descriptor) -> None:
        if desc.full_name in found:
            return
        found[desc.full_name] = desc
        for f in desc.fields:
            if f.message_type is not None:
                walk(f.message_type)

    for desc in pb.DESCRIPTOR.message_types_by_name.values():
        walk(desc)
    return list(found.values())


def test_checked_fields_are_declared_in_number_order() -> None:
    for desc in _messages():
        numbers = [f.number for f in _plan(desc)]
        assert numbers == sorted(numbers), desc.full_name


def test_the_first_bad_field_by_number_is_named() -> None:
    request = pb.SendMessageRequest()
    request.message.message_id = "m\n1"
    request.message.role = pb.ROLE_USER
    request.message.parts.add(text="hi")
    request.message.context_id = "c\x00"
    request.message.task_id = "t\x7f"
    with pytest.raises(A2AError) as refused:
        check_request("SendMessage", request)
    assert refused.value.message.startswith("message.messageId must not hold control")
