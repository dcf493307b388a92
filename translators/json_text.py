"""Reading JSON text that comes from outside (clients, backends, webhooks).

`json.loads` alone is not enough at a trust boundary: it accepts `NaN` and `Infinity`
(not JSON), turns `1e400` into infinity, gives up with RecursionError on deep nesting,
and builds integers no A2A field can hold. Every JSON body the gateway reads goes
through :func:`parse_json`, so each of these becomes the caller's error, never a crash.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, NamedTuple

import orjson

from translators.errors import a2a_error

# Wider than any protobuf integer (uint64), narrower than what costs CPU to convert.
_MAX_INT_DIGITS = 20


class ParsedJson(NamedTuple):
    """A JSON value, and the first number in it that no A2A field can hold (None if none).

    Out-of-range numbers are read as None so that the envelope around them (a JSON-RPC
    id, say) can still be used to answer; the caller decides how to refuse them."""

    value: Any
    bad_number: str | None = None


class _Numbers:
    def __init__(self) -> None:
        self.bad: str | None = None

    def _refuse(self, text: str) -> None:
        if self.bad is None:
            self.bad = text if len(text) <= 40 else text[:37] + "..."

    def constant(self, text: str) -> None:  # NaN, Infinity, -Infinity
        self._refuse(text)

    def real(self, text: str) -> float | None:
        value = float(text)
        if math.isfinite(value):
            return value
        self._refuse(text)
        return None

    def integer(self, text: str) -> int | None:
        if len(text.lstrip("-")) > _MAX_INT_DIGITS:
            self._refuse(text)
            return None
        value = int(text)
        if -(2**64) < value < 2**64:
            return value
        self._refuse(text)
        return None


# One decoder for every parse (json.loads with hooks builds a decoder and its scanner per
# call: half of a small body's parse); its hooks report to the parse running in this
# thread.
_current = threading.local()


def _constant(text: str) -> None:
    _current.numbers.constant(text)


def _real(text: str) -> float | None:
    real: float | None = _current.numbers.real(text)
    return real


def _integer(text: str) -> int | None:
    integer: int | None = _current.numbers.integer(text)
    return integer


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_real, parse_int=_integer)


# orjson reads most bodies 5x faster, and refuses NaN, Infinity, 1e400, bad UTF-8 and deep
# nesting as the json module above does; but it reads an integer beyond 64 bits as a float.
# So it reads only text without a run of 19 digits (every integer it holds is then exact,
# below 2**63), and anything it refuses is read again by the json module, whose answer
# (a value, a bad number or the error) stands. tests/unit/translators/test_json_text.py
# holds the two readings equal. The runs are found by mapping each digit to "0" and the
# rest to a space (bytes.translate: a twentieth of a regular expression's time).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def parse_json(raw: bytes | str, *, what: str = "the body") -> ParsedJson:
    """Parse JSON text; JSONParseError (with ``what`` named) when it is not JSON, is not
    UTF-8, or nests deeper than the parser can follow."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if _LONG_RUN not in data.translate(_DIGITS_AS_ZEROS):
        try:
            # tuple.__new__: the NamedTuple's own __new__ is a Python function, and its
            # call cost a third of reading a small body.
            return tuple.__new__(ParsedJson, (orjson.loads(raw), None))
        except orjson.JSONDecodeError:
            pass
    return parse_json_module(raw, what=what)


def parse_json_module(raw: bytes | str, *, what: str = "the body") -> ParsedJson:
    """:func:`parse_json` by the json module alone: the reference reading."""
    numbers = _Numbers()
    _current.numbers = numbers
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except UnicodeDecodeError:
        raise a2a_error("JSONParseError", f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise a2a_error("JSONParseError", f"{what} nests too deeply") from None
    except ValueError as exc:
        raise a2a_error("JSONParseError", f"{what} is not valid JSON: {exc}") from None
    return ParsedJson(value, numbers.bad)


def number_refusal(bad_number: str, name: str = "InvalidParamsError") -> Any:
    """The error for a number JSON allows but no A2A field can hold."""
    return a2a_error(name, f"number {bad_number} is out of range (A2A numbers are finite and "
                     f"fit in 64 bits)")


# The fallback for what orjson does not write (below), built once: json.dumps with
# options builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False)


def dumps(value: Any) -> str:
    """JSON text for a peer: never NaN or Infinity, and always encodable as UTF-8 (a
    string a client sent may hold a lone surrogate, which UTF-8 cannot carry: then the
    whole text is escaped to ASCII, which JSON allows)."""
    return dump_bytes(value).decode()


def dump_bytes(value: Any) -> bytes:
    """:func:`dumps` as the UTF-8 bytes sent on the wire, compact.

    orjson writes them in a fifteenth of the json module's time (bench/README.md). What
    it refuses — a lone surrogate, an integer beyond 64 bits, a non-string key — the
    json module writes, to ASCII when UTF-8 cannot carry the text. NaN and Infinity
    never get here: parsing refuses them (parse_json) and so does ProtoJSON's writer for
    a Struct number (protojson.py), the only float the A2A messages have; the json
    module would refuse them too, orjson would write null."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        pass
    text = _ENCODER.encode(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(value).encode()
