"""The HTTP listener's last line: whatever escapes a handler is answered in the dialect
the request's path speaks, never with aiohttp's plain-text pages or a traceback."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from gateway.http.request import ClientRequest
from gateway.ingress.common import header_version
from gateway.observability.logs.access import client_gone
from translators.dialects import jsonrpc, rest
from translators.errors import A2AError, a2a_error
from translators.rest_routes import dialect_of_path, is_jsonrpc_path
from translators.versions import declared_version, normalize_version

log = structlog.get_logger("a2a_gateway.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# aiohttp's own refusals, by status, as the gateway's errors.
_BY_STATUS = {400: "InvalidRequestError", 404: "MethodNotFoundError",
              405: "MethodNotAllowedError", 408: "RequestTimeoutError",
              413: "PayloadTooLargeError", 431: "InvalidRequestError"}


def render_error(request: ClientRequest, err: A2AError, status: int | None = None,
                 ) -> web.Response:
    """``err`` in the dialect the request's path speaks (before any payload said one)."""
    declared = normalize_version(header_version(request))
    if request.method == "POST" and (request.path == "/" or is_jsonrpc_path(request.path)):
        answer = jsonrpc.ROWS[declared_version(declared)].client(None, None).refusal(err)
    else:
        answer = rest.ROWS[dialect_of_path(request.path, declared)].client(None).refusal(err)
    return web.Response(body=answer.body, content_type="application/json",
                        status=status or answer.status)


@web.middleware
async def answer_in_dialect(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except asyncio.CancelledError:
        client_gone(request)  # no answer, so no access line from aiohttp's hook
        raise
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        name = _BY_STATUS.get(exc.status, "InternalError" if exc.status >= 500
                              else "InvalidRequestError")
        response = render_error(request, a2a_error(name, exc.reason), exc.status)
        for header in ("Allow", "Retry-After"):
            if header in exc.headers:
                response.headers[header] = exc.headers[header]
        return response
    except Exception as exc:
        return unhandled(request, exc)


def unhandled(request: ClientRequest, exc: Exception) -> web.Response:
    """A bug of ours: logged, and said in the caller's dialect; the worker serves on."""
    log.error("unhandled error", path=request.path[:200], method=request.method[:16],
              exc_info=exc)
    return render_error(request, a2a_error("InternalError"))
