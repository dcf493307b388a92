"""The ProtoJSON form of each scalar kind the A2A protos use (string, bytes, bool, int32,
enums) and of google.protobuf.Value, for the plans of translators/protojson.py."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from google.protobuf.descriptor import FieldDescriptor


class ProtoJsonError(ValueError):
    """A value that has no place in the message (or no ProtoJSON form)."""


class UnknownEnumName(Exception):
    """An enum name this schema does not know: ignored, like an unknown field."""


# Where a value is in what is parsed, for error messages only, so made into text only
# for one (path_text): the message's name, then (parent, key) for a field or an entry
# (".key") and (parent, "[", index) for an item ("[index]"). Building the text of every
# field read cost more than setting most fields.
Where = str | tuple["Where", Any] | tuple["Where", str, int]


def path_text(where: Where) -> str:
    if isinstance(where, str):
        return where
    if len(where) == 3:
        return f"{path_text(where[0])}[{where[2]}]"
    return f"{path_text(where[0])}.{where[1]}"


def entry(container: Any, key: str, path: Where) -> Any:
    """A map's or Struct's entry for ``key``, made if new. A key with a lone surrogate
    (JSON can escape one; protobuf strings are UTF-8) is the sender's error, not ours."""
    try:
        return container[key]
    except ValueError:
        raise ProtoJsonError(f"{path_text(path)}: a key is not valid Unicode") from None


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
        return int(number) if _integer(number) else number
    if kind == "struct_value":
        return {k: dump_value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [dump_value(v) for v in value.list_value.values]
    return getattr(value, kind)


# ---------------------------------------------------------------- Timestamp

# The shape nearly every peer sends: UTC with `Z`, 0-9 fractional digits. protobuf's own
# FromJsonString reads it through strptime (~5 µs a status update) and ToJsonString
# writes it through float arithmetic (~3.5 µs); both still handle everything else (an
# offset, a value out of range), so the results cannot differ
# (tests/unit/translators/test_protojson.py).
_UTC_TEXT = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z")
_EPOCH = datetime(1970, 1, 1)
_DAY = 86_400
_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z, Timestamp's last second


def parse_timestamp_into(msg: Any, text: str) -> None:
    """Set a Timestamp from its RFC 3339 text (ValueError when it is not one)."""
    match = _UTC_TEXT.fullmatch(text)
    if match is None:
        msg.FromJsonString(text)
        return
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute),
                          int(second))
    except ValueError:  # day 31 of a short month, second 60...: protobuf says why
        msg.FromJsonString(text)
        return
    since = moment - _EPOCH
    msg.seconds = since.days * _DAY + since.seconds
    msg.nanos = int(fraction.ljust(9, "0")) if fraction else 0


def timestamp_text(msg: Any) -> str:
    """A Timestamp's RFC 3339 text: UTC, `Z`, 0, 3, 6 or 9 fractional digits."""
    seconds, nanos = msg.seconds, msg.nanos
    if not (-62_135_596_800 <= seconds <= _MAX_SECONDS and 0 <= nanos < 1_000_000_000):
        return str(msg.ToJsonString())  # raises, saying what is out of range
    text = (_EPOCH + timedelta(seconds=seconds)).isoformat()
    if not nanos:
        return text + "Z"
    if not nanos % 1_000_000:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if not nanos % 1_000:
        return f"{text}.{nanos // 1_000:06d}Z"
    return f"{text}.{nanos:09d}Z"


def integral(value: Any) -> Any:
    """Struct and Value hold every number as a double; give integral numbers back their
    integer form (exact below 2**53)."""
    if isinstance(value, float) and _integer(value):
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def _integer(number: float) -> bool:
    """Whether a double is written as an integer: integral, exact (below 2**53), and not
    -0.0, which `int` would turn into 0 (JSON keeps `-0.0`; a round trip must too)."""
    return (number.is_integer() and abs(number) < 2**53
            and (number != 0 or math.copysign(1.0, number) > 0))
