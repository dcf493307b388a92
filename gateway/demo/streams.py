"""SSE for the demo agent's streams, whichever protocol frames the events."""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web

from gateway.demo.engine import Subscription
from gateway.demo.wire import JSON

logger = logging.getLogger(__name__)

# An SSE comment now and then lets proxies keep idle streams (a 30 s `slow` task)
# open, and makes writes fail soon after a client has gone away.
KEEPALIVE_SECONDS = 15.0


async def open_sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.content_type = "text/event-stream"
    await response.prepare(request)
    return response


async def serve_events(
    request: web.Request, events: Subscription, frame: Callable[[JSON], bytes]
) -> web.StreamResponse:
    """Every event of ``events`` until the stream ends, each as ``frame`` writes it (a J03
    event in, the bytes of one SSE event out)."""
    try:
        response = await open_sse(request)
        try:
            while not events.finished:
                event = await events.next(KEEPALIVE_SECONDS)
                if event is not None:
                    await response.write(frame(event))
                elif not events.finished:
                    await response.write(b": keep-alive\n\n")
            await response.write_eof()
        except ConnectionResetError:
            logger.info("stream client went away")
    finally:
        events.close()
    return response


async def serve_one_frame(request: web.Request, data: bytes) -> web.StreamResponse:
    """A stream of one SSE event (an error the client reads as a stream)."""
    response = await open_sse(request)
    try:
        await response.write(data)
        await response.write_eof()
    except ConnectionResetError:
        logger.info("stream client went away")
    return response
