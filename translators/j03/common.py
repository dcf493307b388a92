"""Small shared pieces for the J03 translators: shape checks and timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from translators.errors import invalid_params
from translators.vocabulary import JSON


def need_dict(value: Any, path: str) -> JSON:
    if not isinstance(value, dict):
        raise invalid_params(f"{path} must be an object")
    return value


def need_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise invalid_params(f"{path} must be an array")
    return value


def need_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise invalid_params(f"{path} must be a string")
    return value


def lookup(table: dict[str, str], value: Any) -> str | None:
    """``table[value]`` for a string value, else None (a client may send any JSON where a
    name belongs, lists and objects included)."""
    return table.get(value) if isinstance(value, str) else None


def copy_keys(src: JSON, dst: JSON, *keys: str) -> None:
    """Copy the keys that are present and not null (null means absent in both shapes)."""
    for key in keys:
        value = src.get(key)
        if value is not None:
            dst[key] = value


def _parse_iso(value: str, path: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError as exc:
        raise invalid_params(f"{path} is not an ISO 8601 timestamp: {value!r}") from exc
    # v0.3 examples and peers send naive timestamps; they mean UTC (§3.4).
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def iso_to_p10(value: Any, path: str) -> str:
    """Any ISO 8601 timestamp → RFC 3339 UTC with milliseconds, as v1.0 asks (§5.6.1)."""
    parsed = _parse_iso(need_str(value, path), path)
    # isoformat, not strftime: "%Y" is not zero-padded below year 1000 on glibc.
    return parsed.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
