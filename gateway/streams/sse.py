"""Server-sent events on the wire: reading a backend's stream (the framing rules are in
translators/sse.py) and the headers of the streams the gateway serves."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from translators.sse import SseEvent, SseParser, sse_frame

__all__ = ["SSE_HEADERS", "read_sse", "sse_frame"]


async def read_sse(chunks: AsyncIterable[bytes], max_event_bytes: int,
                   ) -> AsyncIterator[SseEvent]:
    parser = SseParser(max_event_bytes)
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
    for event in parser.close():
        yield event


SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # tell nginx-style proxies in front of us not to buffer
}
