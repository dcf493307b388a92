"""Server-sent events: reading a backend's stream and writing a client's.

The reader follows the WHATWG rules that matter for A2A peers (reference §3.8): `data:`
lines are joined with newlines, comments and unknown fields are skipped, `event:` names
the event, a blank line dispatches.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any


@dataclass
class SseEvent:
    data: str
    event: str = "message"


async def read_sse(lines: AsyncIterable[bytes]) -> AsyncIterator[SseEvent]:
    data: list[str] = []
    event = "message"
    async for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent("\n".join(data), event)
            data, event = [], "message"
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value or "message"
    if data:  # a stream cut without the final blank line still delivers its last event
        yield SseEvent("\n".join(data), event)


def sse_frame(payload: Any, event: str | None = None) -> bytes:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # tell nginx-style proxies in front of us not to buffer
}
