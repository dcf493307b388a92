"""The "plain reverse proxy" baseline: a minimal aiohttp pass-through proxy.

It does what any reverse proxy must do and nothing else: read the request, forward the
body and the end-to-end headers to the backend over a pooled keep-alive connection,
and stream the backend's answer back unchanged, chunk by chunk (so SSE passes through
as it arrives). No parsing, no translation, no logging. The gateway does all of this
*plus* decoding, translating and re-encoding, so `gateway / plain proxy` isolates the
cost of the A2A work from the cost of being an extra Python/aiohttp hop.

    python -m bench.plain_proxy --port P --route d03=http://127.0.0.1:9009/ [--route ...]

It runs on uvloop when A2A_GATEWAY_LOOP=uvloop is in its environment (the gateway's own
switch; bench.peers sets it for both), else on asyncio.

`POST /d03` goes to `http://127.0.0.1:9009/`, `POST /d03/x` to `http://127.0.0.1:9009/x`:
the first path segment picks the backend, like the gateway's `/{tenant}`.
"""

from __future__ import annotations

import argparse
import asyncio
import os

import aiohttp
from aiohttp import web
from multidict import CIMultiDictProxy

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the client library recomputes.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"})
ROUTES = web.AppKey("routes", dict[str, str])
SESSION = web.AppKey("session", aiohttp.ClientSession)


def _end_to_end(headers: CIMultiDictProxy[str]) -> list[tuple[str, str]]:
    # A list, not a dict: repeated headers (Set-Cookie, Vary...) stay repeated.
    return [(k, v) for k, v in headers.items() if k.lower() not in _HOP]


async def forward(request: web.Request) -> web.StreamResponse:
    name, _, rest = request.match_info["path"].partition("/")
    base = request.app[ROUTES].get(name)
    if base is None:
        return web.Response(status=404, text=f"no route {name!r}\n")
    url = base + rest + (f"?{request.query_string}" if request.query_string else "")
    body = await request.read()
    session = request.app[SESSION]
    try:
        async with session.request(request.method, url, data=body,
                                   headers=_end_to_end(request.headers)) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason,
                                          headers=_end_to_end(upstream.headers))
            if upstream.content_length is not None:
                response.content_length = upstream.content_length
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
    except aiohttp.ClientError as exc:
        return web.Response(status=502, text=f"bad gateway: {exc!r}\n")


async def _open(app: web.Application) -> None:
    # Same pool shape as the gateway's backend session (gateway/server/app.py new_session).
    connector = aiohttp.TCPConnector(limit=512, limit_per_host=128)
    app[SESSION] = aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                         timeout=aiohttp.ClientTimeout(total=None))


async def _close(app: web.Application) -> None:
    await app[SESSION].close()


def build_app(routes: dict[str, str]) -> web.Application:
    app = web.Application(client_max_size=8 * 1024 * 1024)
    app[ROUTES] = routes
    app.on_startup.append(_open)
    app.on_cleanup.append(_close)
    app.router.add_route("*", "/{path:.+}", forward)
    return app


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plain_proxy")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--route", action="append", default=[], metavar="NAME=URL",
                        help="first path segment NAME goes to URL (ending in /)")
    args = parser.parse_args()
    routes = {}
    for item in args.route:
        name, _, url = item.partition("=")
        routes[name] = url if url.endswith("/") else url + "/"
    if os.environ.get("A2A_GATEWAY_LOOP") == "uvloop":
        import uvloop
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(build_app(routes), host=args.host, port=args.port, access_log=None,
                print=None, shutdown_timeout=2.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
