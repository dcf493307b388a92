"""One HTTP exchange with a backend (JSON-RPC and REST share it): timeouts, bounded reads,
the headers the client should see, and transport failures turned into the gateway's own
errors."""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from gateway.call import Call
from gateway.config.models import BackendConfig
from gateway.egress.base import (
    ECHOED_HEADERS,
    EventBatches,
    backend_timeout,
    backend_unavailable,
    bad_response,
    too_large,
)
from gateway.egress.http1 import Answer, AnswerTooLarge, Http1Pool, NotConnected, Query
from translators.dialects.contract import EventReader
from translators.errors import A2AError

# What a status page from something in front of the backend (a proxy, a load balancer)
# means when its body is not the backend's own error.
_PROXY_STATUS = {502: "unavailable", 503: "unavailable", 504: "timeout"}


def client_session(tls: ssl.SSLContext | None = None) -> aiohttp.ClientSession:
    """A pooled session toward backends (``tls``: the context https:// URLs use instead of
    the system's CAs). Per-call timeouts are set by each backend. The pool itself is
    unbounded: what may be open toward a backend is bounded by the gateway's own slots
    (limits.py), which refuse in the caller's dialect instead of queueing a unary call
    behind streams that hold every pooled connection."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, enable_cleanup_closed=True,
                                     ssl=tls if tls is not None else True)
    # No cookie jar: the session serves every caller, so a cookie one caller's call got
    # from a backend must not ride along on anyone else's calls.
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                                 cookie_jar=aiohttp.DummyCookieJar())


@functools.lru_cache(maxsize=64)
def _fixed_timeout(total: float | None, connect: float) -> aiohttp.ClientTimeout:
    """The timeouts of calls without a deadline of their own: a few per config, built
    once (they are immutable)."""
    return aiohttp.ClientTimeout(total=total, sock_connect=connect)


def _unary_seconds(config: BackendConfig, call: Call) -> float:
    """How long a unary exchange may take: the backend's timeout, or what is left of the
    caller's deadline when that is shorter."""
    if call.ctx.facts.deadline is None:
        return config.timeout
    return call.ctx.remaining(config.timeout)


def _timeout(config: BackendConfig, call: Call, stream: bool) -> aiohttp.ClientTimeout:
    if stream:  # a stream may last; its events are bounded by the pipeline
        return _fixed_timeout(None, config.connect_timeout)
    if call.ctx.facts.deadline is None:
        return _fixed_timeout(config.timeout, config.connect_timeout)
    return aiohttp.ClientTimeout(total=_unary_seconds(config, call),
                                 sock_connect=config.connect_timeout)


@asynccontextmanager
async def backend_request(session: aiohttp.ClientSession, config: BackendConfig, call: Call,
                          method: str, url: str, *, stream: bool,
                          **kwargs: Any) -> AsyncIterator[aiohttp.ClientResponse]:
    timeout = _timeout(config, call, stream)
    try:
        async with session.request(method, url, timeout=timeout, allow_redirects=False,
                                   **kwargs) as resp:
            call.ctx.outcome.response_headers.update(
                {h: resp.headers[h] for h in ECHOED_HEADERS if h in resp.headers})
            yield resp
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        if isinstance(exc, aiohttp.ServerTimeoutError):
            raise backend_timeout(call, config, timeout.total or config.connect_timeout,
                                  "the answer") from None
        raise backend_unavailable(call, config, str(exc) or type(exc).__name__,
                                  sent=not isinstance(exc, aiohttp.ClientConnectorError),
                                  ) from None
    except TimeoutError:
        raise backend_timeout(call, config, timeout.total or 0, "the answer") from None


async def read_capped(call: Call, config: BackendConfig, resp: aiohttp.ClientResponse) -> bytes:
    """The whole answer body, refused past `max_answer_bytes` (before reading it when
    Content-Length says so)."""
    limit = config.max_answer_bytes
    if resp.content_length is not None and resp.content_length > limit:
        raise too_large(call, config)
    content = resp.content
    if content.is_eof():  # the whole answer is in (a small one): take it as it is
        body = content.read_nowait()
        if len(body) > limit:
            raise too_large(call, config)
        return body
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large(call, config)
        chunks.append(chunk)
    return b"".join(chunks)


def check_proxy_page(call: Call, config: BackendConfig, status: int,
                     content_type: str) -> None:
    """A 502/503/504 whose body is not JSON (so not the backend's own error): whatever
    stands in front of the backend could not reach it, or gave up waiting."""
    meaning = _PROXY_STATUS.get(status)
    if meaning is None or "json" in content_type:
        return
    if meaning == "unavailable":
        raise backend_unavailable(call, config, f"HTTP {status} from in front of the "
                                  f"backend ({content_type})")
    raise backend_timeout(call, config, config.timeout, f"HTTP {status}, the answer")


async def unary_exchange(session: aiohttp.ClientSession, pool: Http1Pool | None,
                         config: BackendConfig, call: Call, method: str, base: str,
                         path: str, query: Query, headers: dict[str, str],
                         body: bytes | None) -> Answer:
    """One unary exchange with the backend at ``base`` + ``path``: over its keep-alive pool
    when it has one (http1.py), else over the session; the same bounds, errors, echoed
    headers and reading of a proxy's error page either way."""
    if pool is None:
        async with backend_request(session, config, call, method, base + path, stream=False,
                                   params=query or None, data=body, headers=headers) as resp:
            answer = Answer(resp.status, resp.headers, await read_capped(call, config, resp))
    else:
        target = pool.target(path, query) if path or query else None
        answer = await _pooled(pool, config, call, method, target, headers, body)
    check_proxy_page(call, config, answer.status, answer.content_type)
    return answer


async def _pooled(pool: Http1Pool, config: BackendConfig, call: Call, method: str,
                  target: str | None, headers: dict[str, str], body: bytes | None) -> Answer:
    total = _unary_seconds(config, call)
    try:
        answer = await pool.request(method, target, headers, body,
                                    limit=config.max_answer_bytes, total=total,
                                    connect=config.connect_timeout)
    except AnswerTooLarge:
        raise too_large(call, config) from None
    except TimeoutError:  # before OSError: it is one
        raise backend_timeout(call, config, total, "the answer") from None
    except (OSError, ValueError) as exc:  # ValueError: a header that cannot be sent
        raise backend_unavailable(call, config, str(exc) or type(exc).__name__,
                                  sent=not isinstance(exc, NotConnected | ValueError)) from None
    call.ctx.outcome.response_headers.update(
        {h: answer.headers[h] for h in ECHOED_HEADERS if h in answer.headers})
    return answer


def is_event_stream(resp: aiohttp.ClientResponse) -> bool:
    return resp.headers.get("content-type", "").startswith("text/event-stream")


async def read_events(resp: aiohttp.ClientResponse, reader: EventReader) -> EventBatches:
    """A backend's event stream as it arrives, one batch per read that completed an
    event, read by the backend dialect's reader."""
    async for chunk in resp.content.iter_any():
        events = reader.feed(chunk)
        if events:
            yield events
    tail = reader.close()
    if tail:
        yield tail


def not_an_event_stream(call: Call, config: BackendConfig,
                        resp: aiohttp.ClientResponse) -> A2AError:
    return bad_response(call, config, "expected an event stream, got "
                        f"{resp.headers.get('content-type', 'no content type')!r}")
