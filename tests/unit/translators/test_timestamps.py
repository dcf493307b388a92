"""Timestamps (translators/protojson_scalars.py): the fast reading and writing of the
common RFC 3339 shape give what protobuf's FromJsonString and ToJsonString give, and
anything else still goes to them (the same value, or the same error)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf import timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from translators.protojson_scalars import parse_timestamp_into, timestamp_text

_FIRST, _LAST = -62_135_596_800, 253_402_300_799  # 0001-01-01, 9999-12-31T23:59:59


def _theirs(text: str) -> tuple[int, int] | str:
    ts = timestamp_pb2.Timestamp()
    try:
        ts.FromJsonString(text)
    except ValueError as exc:
        return f"error {type(exc).__name__}"
    return ts.seconds, ts.nanos


def _ours(text: str) -> tuple[int, int] | str:
    ts = timestamp_pb2.Timestamp()
    try:
        parse_timestamp_into(ts, text)
    except ValueError as exc:
        return f"error {type(exc).__name__}"
    return ts.seconds, ts.nanos


@settings(max_examples=400, deadline=None)
@given(st.integers(_FIRST, _LAST), st.integers(0, 999_999_999), st.integers(0, 9))
def test_a_utc_text_reads_the_same(seconds: int, nanos: int, digits: int) -> None:
    moment = (datetime(1970, 1, 1) + timedelta(seconds=seconds)).isoformat()
    fraction = f"{nanos:09d}"[:digits]
    text = f"{moment}.{fraction}Z" if digits else f"{moment}Z"
    assert _ours(text) == _theirs(text)


@settings(max_examples=400, deadline=None)
@given(st.integers(_FIRST - 10, _LAST + 10), st.integers(-1, 1_000_000_000))
def test_a_timestamp_writes_the_same(seconds: int, nanos: int) -> None:
    ts = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    try:
        expected: str = ts.ToJsonString()
    except ValueError:
        with pytest.raises(ValueError):
            timestamp_text(ts)
        return
    assert timestamp_text(ts) == expected


@pytest.mark.parametrize("text", [
    "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:60Z",
    "2026-01-01T00:00:00.1234567890Z", "2026-01-01t00:00:00Z", "2026-01-01T00:00:00z",
    "2026-01-01T00:00:00+02:00", "2026-01-01T00:00:00.5-05:30", "2026-01-01T00:00:00",
    "2026-1-01T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T00:00:00Z ", "",
    "2026-01-01T00:00:00.Z", "9999-12-31T23:59:59.999999999Z", "0001-01-01T00:00:00Z",
])
def test_other_texts_read_as_protobuf_reads_them(text: str) -> None:
    assert _ours(text) == _theirs(text)


def test_now_reads_back() -> None:
    now = datetime.now(UTC).replace(tzinfo=None).isoformat() + "Z"
    assert _ours(now) == _theirs(now)
