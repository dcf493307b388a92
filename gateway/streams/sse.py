"""Server-sent events on the wire: the headers of the streams the gateway serves (the
framing rules are in translators/sse.py; a backend's stream is read by egress/http.py)."""

from __future__ import annotations

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # tell nginx-style proxies in front of us not to buffer
}
