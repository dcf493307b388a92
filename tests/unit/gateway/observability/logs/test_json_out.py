"""JSON out: the wire's (translators/json_text.dump_bytes) and the log line's
(gateway/log_lines.render_line). orjson writes what it can; what it refuses is written by
the json module, so no value a peer sent is lost or crashes a call."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from unittest import mock

import orjson
import pytest

from gateway.observability.logs.lines import render_line, utc_timestamp
from translators.json_text import dump_bytes, dumps


def test_what_orjson_writes_reads_back_the_same() -> None:
    value = {"jsonrpc": "2.0", "id": 7, "result": {"text": "héllo ✓", "n": 1.5, "l": [1, None]}}
    assert dump_bytes(value) == orjson.dumps(value)
    assert json.loads(dump_bytes(value)) == value


def test_what_orjson_refuses_the_json_module_writes() -> None:
    big = 2**70  # a JSON number, but beyond orjson's 64 bits
    assert json.loads(dump_bytes({"id": big})) == {"id": big}
    assert json.loads(dump_bytes({1: "x"})) == {"1": "x"}  # a non-string key
    # A lone surrogate (a client's JSON may carry one) cannot be UTF-8: escaped to ASCII.
    text = dumps({"t": "a\ud800b"})
    assert text.isascii() and json.loads(text) == {"t": "a\ud800b"}


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


def test_log_lines_keep_their_keys_and_write_any_value() -> None:
    line = json.loads(render_line(None, "info", {"event": "call", "tenant": "t",
                                                 "odd": _Opaque(), "big": 2**70}))
    assert list(line)[:4] == ["event", "tenant", "odd", "big"]
    assert line["odd"] == "<opaque>" and line["big"] == 2**70
    assert line["level"] == "info" and line["timestamp"].endswith("Z")
    line = json.loads(render_line(None, "warn", {"event": "x", "s": "\ud800"}))
    assert line["level"] == "warning" and line["s"] == "\ud800"


@pytest.mark.parametrize("micros", [0, 1, 999, 1000, 10_000, 123_456, 999_999])
def test_the_timestamp_is_the_instant_in_iso_form(micros: int) -> None:
    nanos = (1_700_000_000 * 1_000_000 + micros) * 1000 + 789  # sub-microsecond: cut
    with mock.patch("time.time_ns", return_value=nanos):
        text = utc_timestamp()
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)
    assert text == instant.isoformat().replace("+00:00", "Z")
