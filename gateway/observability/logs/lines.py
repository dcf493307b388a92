"""The last step of every log line: level, traceback, JSON text; the UTC timestamp.

One structlog processor doing what `add_log_level`, `TimeStamper(fmt="iso", utc=True)`,
`format_exc_info` and `JSONRenderer()` did in a chain, with the same keys in the same
order and the same values (compact JSON), at a fraction of their cost (every call writes
a line, so this runs once per call): the timestamp's date and time are formatted once per
second, and the JSON is orjson's.

In the gateway the timestamp is not put in by the renderer but by the writer
(:func:`render_unstamped`, then :func:`stamp` under the writer's lock,
gateway/observability/logs/writer.py): a timestamp taken when the line is rendered and a
line kept for the end of the loop's turn made lines of one process leave out of timestamp
order.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import orjson
from structlog.processors import format_exc_info
from structlog.typing import EventDict, WrappedLogger

_LEVELS = {"warn": "warning", "exception": "error"}  # as structlog's add_log_level


def _fallback(obj: Any) -> Any:
    """What JSONRenderer writes for values JSON has no type for."""
    try:
        return obj.__structlog__()
    except AttributeError:
        return repr(obj)


_encode_json = json.JSONEncoder(default=_fallback).encode  # json.dumps(value, default=_fallback)


def _encode(event_dict: EventDict) -> str:
    """The line's JSON: orjson's (a line is written per call: a third of the json
    module's time), the json module's for what orjson refuses (an integer beyond 64 bits,
    a lone surrogate, a non-string key)."""
    try:
        return orjson.dumps(event_dict, default=_fallback).decode()
    except orjson.JSONEncodeError:
        return _encode_json(event_dict)


# A header (or key=value) whose name says it carries a credential, and its value up to
# the end of the line or of a quoted/escaped string.
_CREDENTIAL = re.compile(
    r"(?i)\b((?:proxy-)?authorization|[\w-]*api[-_]?key|(?:set-)?cookie|[\w-]*token"
    r"|[\w-]*secret|password)(\s*[:=]\s*)([^\r\n'\"\\]+)")


def redact(text: str) -> str:
    """``text`` with the values of credential headers replaced: `[redacted]`."""
    return _CREDENTIAL.sub(r"\1\2[redacted]", text) if ":" in text or "=" in text else text


_second: tuple[int, str] = (-1, "")  # the last second formatted, and its text
# "000" to "999": the microseconds as two table look-ups, not a formatted integer (a
# third of the timestamp's cost, and every line has one).
_DIGITS3 = [f"{i:03d}" for i in range(1000)]


def utc_timestamp() -> str:
    """Now, as datetime.now(UTC).isoformat() with "Z": 2026-01-02T03:04:05.123456Z (no
    fraction when the microseconds are 0)."""
    global _second
    now = time.time_ns() // 1000
    seconds, micros = divmod(now, 1_000_000)
    second = _second  # one read: another thread may replace it meanwhile
    if second[0] != seconds:
        second = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    text = second[1]
    if not micros:
        return f"{text}Z"
    millis, rest = divmod(micros, 1000)
    return f"{text}.{_DIGITS3[millis]}{_DIGITS3[rest]}Z"


def _leveled(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    event_dict["level"] = _LEVELS.get(method_name, method_name)
    if "exc_info" in event_dict:
        event_dict = format_exc_info(logger, method_name, event_dict)
        if "exception" in event_dict:  # a traceback may quote what a client sent
            event_dict["exception"] = redact(event_dict["exception"])
    return event_dict


def render_line(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
    """The whole line, timestamp included (structlog's processor chain, as above)."""
    event_dict = _leveled(logger, method_name, event_dict)
    event_dict["timestamp"] = utc_timestamp()
    return _encode(event_dict)


def render_unstamped(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
    """The line without its timestamp: :func:`stamp` adds it, last, where the line is
    ordered among the others (the writer)."""
    return _encode(_leveled(logger, method_name, event_dict))


def render_info(event_dict: EventDict) -> str:
    """:func:`render_unstamped` of an info line that carries no traceback (the access
    line, written per call): the level set, no checks."""
    event_dict["level"] = "info"
    return _encode(event_dict)


def stamp(line: str) -> str:
    """``line`` (a JSON object from :func:`render_unstamped`) with `timestamp` last, as
    :func:`render_line` writes it."""
    return f'{line[:-1]},"timestamp":"{utc_timestamp()}"}}'
