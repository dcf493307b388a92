"""JSON in (translators/json_text.parse_json): orjson reads what it reads exactly, the json
module the rest, and the two readings never differ — in the value (its types, key order
and the sign of zero included), in the number no A2A field can hold, or in the error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from translators.dialects.base import json_object
from translators.errors import A2AError
from translators.json_text import parse_json, parse_json_module

_LEAVES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)
# Text the json module writes, and text it does not: what a peer may send.
_ODD = st.sampled_from(["NaN", "-Infinity", "1e400", "-1e400", "1e-400", "-0", "-0.0",
                        "18446744073709551615", "18446744073709551616", "9" * 25,
                        "-9223372036854775809", '"\\ud800"', '"a\\u0000b"', "\ufeff{}",
                        '{"a":1,"a":2,"b":3}', "[" * 1100 + "]" * 1100, "1.5e308", "{} x",
                        '"\x01"', "0123", "1.", ".5", "[1,]", " \t\n[1] \r\n", "true"])


def _reading(raw: bytes | str, parse: Any) -> tuple[str, str | None] | str:
    try:
        parsed = parse(raw)
    except A2AError as err:
        return f"error: {err.kind.name}: {err}"
    return repr(parsed.value), parsed.bad_number


def _same(raw: bytes | str) -> None:
    assert _reading(raw, parse_json) == _reading(raw, parse_json_module)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_a_value_reads_the_same_either_way(value: Any) -> None:
    text = json.dumps(value)
    _same(text)
    _same(text.encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_ODD, _VALUES.map(json.dumps)), min_size=1, max_size=4))
def test_odd_text_reads_the_same_either_way(parts: list[str]) -> None:
    text = "[" + ",".join(parts) + "]"
    _same(text)
    _same(text.encode("utf-8", errors="surrogatepass"))


@pytest.mark.parametrize("raw", [b"\xff\xfe", b'{"a": "\xc3"}', b"", b"   "])
def test_bytes_that_are_not_json_text_are_refused_the_same_way(raw: bytes) -> None:
    _same(raw)
    reading = _reading(raw, parse_json)
    assert isinstance(reading, str) and reading.startswith("error: JSONParseError")


def test_an_integer_beyond_64_bits_is_a_bad_number_not_a_float() -> None:
    parsed = parse_json(b'{"id": 18446744073709551616, "n": 1}')
    assert parsed.bad_number == "18446744073709551616"
    assert parsed.value == {"id": None, "n": 1}


_SMALL_INTS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.text(max_size=12),
              st.integers(min_value=-(2**63), max_value=2**63 - 1),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _SMALL_INTS, max_size=5))
def test_a_forwarded_answer_reads_as_the_json_module_reads_it(value: dict[str, Any]) -> None:
    """json_object (a same-dialect answer, read to check it) reads through orjson: the
    same value as the json module's, the sign of zero and key order included."""
    raw = json.dumps(value).encode()
    assert repr(json_object(raw)) == repr(json.loads(raw))


@pytest.mark.parametrize("raw", [b'{"a": NaN, "b": -Infinity}', b"[1]", b"\xff", b'{"a":1',
                                 b"[" * 1100 + b"]" * 1100, b'{"a":1,"a":2}'])
def test_a_forwarded_answer_that_orjson_refuses_reads_as_the_json_module_reads_it(
        raw: bytes) -> None:
    try:
        expected = json.loads(raw)
    except (ValueError, RecursionError):
        expected = None
    assert repr(json_object(raw)) == repr(expected if isinstance(expected, dict) else None)
