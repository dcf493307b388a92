"""Building and running the gateway's servers."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp import web

from gateway.config import GatewayConfig
from gateway.ingress import jsonrpc, rest
from gateway.ingress.common import GATEWAY_KEY
from gateway.observe import configure_logging
from gateway.pipeline import Gateway

log = structlog.get_logger("a2a_gateway")


@dataclass
class GatewayHolder:
    """The gateway in use; a config reload swaps it without touching open connections."""

    current: Gateway


def split_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def build_http_app(holder: GatewayHolder) -> web.Application:
    app = web.Application(client_max_size=holder.current.config.max_body_bytes)
    app[GATEWAY_KEY] = holder
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/", jsonrpc.handle)
    # Everything else goes through the REST router, which also hands `POST /{tenant}`
    # (JSON-RPC with the tenant in the path) back to the JSON-RPC codec.
    for verb in ("GET", "POST", "DELETE"):
        app.router.add_route(verb, "/{path:.+}", rest.handle)
    return app


def new_session() -> aiohttp.ClientSession:
    # One pooled session for all backends; per-call timeouts are set by each backend.
    connector = aiohttp.TCPConnector(limit=512, limit_per_host=128, enable_cleanup_closed=True)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))


class Server:
    """The running gateway: backends, the HTTP listener and the optional demo agent."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._runners: list[web.AppRunner] = []
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        config = self.config
        if config.demo_agent is not None:
            from gateway.demo_agent import start_demo_agent

            host, port = split_host_port(config.demo_agent.listen)
            self._runners.append(await start_demo_agent(host, port))
            log.info("demo agent started", listen=config.demo_agent.listen)
        self._session = new_session()
        holder = GatewayHolder(Gateway(config, self._session))
        # Listeners open last: once they accept, every part behind them can serve.
        runner = web.AppRunner(build_http_app(holder), handler_cancellation=True,
                               access_log=None)
        await runner.setup()
        host, port = split_host_port(config.listen.http)
        await web.TCPSite(runner, host, port).start()
        self._runners.insert(0, runner)
        log.info("gateway listening", http=config.listen.http,
                 tenants=sorted(config.tenants), default_tenant=config.default_tenant)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        if self._session is not None:
            await self._session.close()


async def serve(config: GatewayConfig) -> int:
    configure_logging(config.log_level)
    server = Server(config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
    return 0
