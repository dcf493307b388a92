"""One HTTP exchange with a backend (JSON-RPC and REST share it): timeouts, the headers
the client should see, and transport failures turned into the gateway's own errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from gateway.call import Call
from gateway.config import BackendConfig
from gateway.egress.base import backend_timeout, backend_unavailable

# Headers a backend may answer with that mean something to the client.
_ECHOED = ("a2a-extensions", "x-a2a-extensions")


def _timeout(config: BackendConfig, call: Call, stream: bool) -> aiohttp.ClientTimeout:
    if stream:  # a stream may last; only silence is bounded
        return aiohttp.ClientTimeout(total=None, sock_connect=config.connect_timeout,
                                     sock_read=config.stream_idle_timeout)
    return aiohttp.ClientTimeout(total=call.ctx.remaining(config.timeout),
                                 sock_connect=config.connect_timeout)


@asynccontextmanager
async def backend_request(session: aiohttp.ClientSession, config: BackendConfig, call: Call,
                          method: str, url: str, *, stream: bool,
                          **kwargs: Any) -> AsyncIterator[aiohttp.ClientResponse]:
    timeout = _timeout(config, call, stream)
    try:
        async with session.request(method, url, timeout=timeout, **kwargs) as resp:
            call.ctx.response_headers.update(
                {h: resp.headers[h] for h in _ECHOED if h in resp.headers})
            yield resp
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        if isinstance(exc, aiohttp.ServerTimeoutError):
            raise backend_timeout(config, timeout.sock_read or timeout.total or 0) from None
        raise backend_unavailable(config, str(exc) or type(exc).__name__) from None
    except TimeoutError:
        raise backend_timeout(config, timeout.total or 0) from None
