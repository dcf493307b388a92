"""Server-sent events: the framing both HTTP bindings use for streams (reference §3.8).

The parser follows the WHATWG rules that matter for A2A peers: `data:` lines are joined
with newlines, comments and unknown fields are skipped, `event:` names the event, a blank
line dispatches; lines end in LF, CRLF or CR. It is fed bytes as they arrive and bounds
what one event may hold, so a peer cannot make the gateway buffer without limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from translators.errors import a2a_error
from translators.json_text import dump_bytes


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"


class SseParser:
    """Incremental SSE parser; InvalidAgentResponseError when one event (or one line)
    exceeds ``max_event_bytes``."""

    def __init__(self, max_event_bytes: int) -> None:
        self._max = max_event_bytes
        self._partial = b""  # the line being received
        self._data: list[str] = []
        self._size = 0  # bytes held for the current event
        self._event = "message"
        self._skip_lf = False  # the last chunk ended in CR: a leading LF belongs to it

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = chunk.endswith(b"\r")
        buffer = self._partial + chunk
        lines = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) + self._size > self._max:
            raise self._too_large()
        events: list[SseEvent] = []
        for line in lines:
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SseEvent]:
        """What a stream cut without its final blank line still delivers."""
        events = [] if not self._partial else [e for e in [self._line(
            self._partial.decode("utf-8", errors="replace"))] if e is not None]
        self._partial = b""
        if self._data:
            events.append(SseEvent("\n".join(self._data), self._event))
            self._data, self._size = [], 0
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            event = SseEvent("\n".join(self._data), self._event) if self._data else None
            self._data, self._size, self._event = [], 0, "message"
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._size += len(value) + 1
            if self._size > self._max:
                raise self._too_large()
            self._data.append(value)
        elif name == "event":
            self._event = value or "message"
        return None

    def _too_large(self) -> Exception:
        return a2a_error("InvalidAgentResponseError", f"a stream event is larger than "
                         f"{self._max} bytes (max_answer_bytes)", limit=self._max)


def event_fields(event_id: str, retry_ms: int | None = None) -> bytes:
    """The `retry:` and `id:` fields that go before an event's `data:` (in the same event:
    a block of fields without data reaches some clients as an event of empty data). The
    id must hold no line break or NUL (a client ignores an id with a NUL)."""
    if "\n" in event_id or "\r" in event_id or "\0" in event_id:
        raise ValueError("an SSE id holds no line break or NUL")
    retry = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
    return b"".join((retry, b"id: ", event_id.encode(), b"\n"))


def sse_frame(payload: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return b"".join((head, b"data: ", dump_bytes(payload), b"\n\n"))
