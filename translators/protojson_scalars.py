"""The ProtoJSON form of each scalar kind the A2A protos use (string, bytes, bool, int32,
enums) and of google.protobuf.Value, for the plans of translators/protojson.py."""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor


class ProtoJsonError(ValueError):
    """A value that has no place in the message (or no ProtoJSON form)."""


class UnknownEnumName(Exception):
    """An enum name this schema does not know: ignored, like an unknown field."""


# ---------------------------------------------------------------- scalars


def parse_string(value: Any) -> str:
    if not isinstance(value, str):
        raise ProtoJsonError(f"expected a string, got {type(value).__name__}")
    return value


def parse_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ProtoJsonError("expected true or false")
    return value


def parse_int32(value: Any) -> int:
    if isinstance(value, bool):
        raise ProtoJsonError("expected an integer, got a boolean")
    if isinstance(value, float):
        if not value.is_integer():
            raise ProtoJsonError(f"expected an integer, got {value}")
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value) if " " not in value else None
        except ValueError:
            value = None
        if value is None:
            raise ProtoJsonError("expected an integer")
    elif not isinstance(value, int):
        raise ProtoJsonError(f"expected an integer, got {type(value).__name__}")
    number = int(value)
    if not -(2**31) <= number < 2**31:
        raise ProtoJsonError(f"{number} is out of range for int32")
    return number


def parse_bytes(value: Any) -> bytes:
    text = parse_string(value).encode()
    try:
        return base64.urlsafe_b64decode(text.replace(b"+", b"-").replace(b"/", b"_")
                                        + b"=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ProtoJsonError("not base64") from None


def enum_parser(desc: FieldDescriptor, aliases: dict[str, str]) -> Callable[[Any], int]:
    by_name: dict[str, int] = {v.name: v.number for v in desc.enum_type.values}
    by_name.update({alias: by_name[name] for alias, name in aliases.items() if name in by_name})

    def parse(value: Any) -> int:
        if isinstance(value, str):
            number = by_name.get(value)
            if number is not None:
                return number
            try:
                return int(value)
            except ValueError:
                raise UnknownEnumName from None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ProtoJsonError(f"invalid enum value {value!r}")

    return parse


def enum_dumper(desc: FieldDescriptor) -> Callable[[int], Any]:
    names = {v.number: v.name for v in desc.enum_type.values}
    return lambda number: names.get(number, number)


def dump_bytes_b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def dump_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number) or math.isnan(number):
            raise ProtoJsonError(f"{number} has no JSON form")
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "struct_value":
        return {k: dump_value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [dump_value(v) for v in value.list_value.values]
    return getattr(value, kind)
