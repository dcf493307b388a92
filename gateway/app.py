"""Building and running the gateway's servers."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import grpc
import structlog
from aiohttp import web

from gateway import tracing
from gateway.config import GatewayConfig
from gateway.ingress import cards, jsonrpc, rest
from gateway.ingress.common import GATEWAY_KEY, gateway_of
from gateway.ingress.connections import (
    ConnectionGuard,
    GuardedSite,
    raise_open_files_limit,
    track_requests,
)
from gateway.ingress.errors import answer_in_dialect
from gateway.ingress.grpc import start_grpc_server
from gateway.lifecycle import ConfigWatcher, Streams, readiness
from gateway.metrics import exposition
from gateway.observe import configure_logging
from gateway.pipeline import Gateway
from gateway.relay import endpoint as relay_endpoint
from gateway.state import Store, open_store
from gateway.state.config import redact_url
from gateway.workers.worker import WorkerRole
from translators.rest_routes import JSONRPC_TENANT_ROUTES

log = structlog.get_logger("a2a_gateway")


@dataclass
class GatewayHolder:
    """The gateway in use; a config reload swaps it without touching open connections."""

    current: Gateway
    streams: Streams = field(default_factory=Streams)


def split_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    report = await readiness(gateway.tenants, gateway.config.readiness_timeout,
                             gateway.store)
    return web.json_response(report, status=200 if report["status"] == "ready" else 503)


async def metrics(_: web.Request) -> web.Response:
    body, content_type = exposition()
    return web.Response(body=body, headers={"Content-Type": content_type})


def build_http_app(holder: GatewayHolder) -> web.Application:
    # Bodies are read by the codecs, bounded by max_body_bytes (ingress/common.read_body).
    app = web.Application(middlewares=[track_requests, answer_in_dialect])
    app[GATEWAY_KEY] = holder
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/", jsonrpc.handle)
    for path in JSONRPC_TENANT_ROUTES:  # POST /{tenant}: JSON-RPC with the tenant in the path
        app.router.add_post(path, jsonrpc.handle)
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json",
                 "/{tenant}/.well-known/agent-card.json"):
        app.router.add_get(path, cards.handle)
    # Backends POST push notifications for relayed webhooks here (relay/endpoint.py).
    app.router.add_post("/_relay/{sealed}", relay_endpoint.handle)
    # Everything else goes through the REST router, which also hands `POST /{tenant}`
    # (JSON-RPC with the tenant in the path) back to the JSON-RPC codec. Any verb and any
    # path (newlines included): what no route serves is refused in the path's dialect.
    app.router.add_route("*", r"/{path:[\s\S]*}", rest.handle)
    return app


def new_session() -> aiohttp.ClientSession:
    # One pooled session for all backends; per-call timeouts are set by each backend. The
    # pool itself is unbounded: what may be open toward a backend is bounded by the
    # gateway's own slots (limits.py), which refuse in the caller's dialect instead of
    # queueing a unary call behind streams that hold every pooled connection.
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, enable_cleanup_closed=True)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))


class Server:
    """The running gateway: backends, listeners, the optional demo agent, reloads."""

    def __init__(self, config: GatewayConfig, config_path: Path | None = None,
                 worker: int | None = None) -> None:
        self.config = config
        self.config_path = config_path
        # Worker `worker` of several (README "Workers"): the listeners are shared with the
        # other workers, and only worker 0 runs the demo agent.
        self.worker = worker
        self._runners: list[web.AppRunner] = []
        self._session: aiohttp.ClientSession | None = None
        self._grpc: grpc.aio.Server | None = None
        self._holder: GatewayHolder | None = None
        self._retiring: dict[asyncio.Task[None], Gateway] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._traced = False  # this server turned tracing on (gateway/tracing.py)
        self.store: Store | None = None

    @property
    def holder(self) -> GatewayHolder:
        assert self._holder is not None, "the server is not started"
        return self._holder

    async def start(self) -> None:
        config = self.config
        self._traced = tracing.configure(config.tracing)  # one tracer per process
        if config.demo_agent is not None and not self.worker:
            from gateway.demo_agent import start_demo_agent

            host, port = split_host_port(config.demo_agent.listen)
            self._runners.append(await start_demo_agent(host, port))
            log.info("demo agent started", listen=config.demo_agent.listen)
        self._session = new_session()
        self.store = open_store(config.state)
        log.info("state store opened", backend=self.store.backend,
                 where=config.state.path if config.state.backend == "sqlite"
                 else redact_url(config.state.url or ""))
        holder = GatewayHolder(Gateway(config, self._session, self.store))
        self._holder = holder
        # Listeners open last: once they accept, every part behind them can serve.
        runner = web.AppRunner(build_http_app(holder), handler_cancellation=True,
                               access_log=None, shutdown_timeout=config.shutdown_grace,
                               keepalive_timeout=config.limits.idle_timeout)
        await runner.setup()
        host, port = split_host_port(config.listen.http)
        self.connections = ConnectionGuard(config.limits)
        shared = self.worker is not None
        await GuardedSite(runner, host, port, self.connections, reuse_port=shared).start()
        self._runners.insert(0, runner)
        if config.listen.grpc:
            self._grpc = await start_grpc_server(lambda: holder.current, config.listen.grpc,
                                                 holder.streams, reuse_port=shared)
        log.info("gateway listening", http=config.listen.http, grpc=config.listen.grpc,
                 tenants=sorted(config.tenants), default_tenant=config.default_tenant)

    async def apply(self, config: GatewayConfig) -> None:
        """Swap in a new config. Calls in flight finish on the gateway they started on;
        the listeners and the demo agent stay as they are (changing them needs a
        restart, and the log says so)."""
        if (config.listen, config.demo_agent, config.tracing, config.state,
                config.workers) != (self.config.listen, self.config.demo_agent,
                                    self.config.tracing, self.config.state,
                                    self.config.workers):
            log.warning("listen, demo_agent, tracing, state and workers changes take effect "
                        "at the next restart")
        assert self._session is not None
        old = self.holder.current
        self.holder.current = Gateway(config, self._session, self.store)
        self.config = config
        # The replaced gateway's backends and relay close when its last call ends.
        retiring = asyncio.create_task(old.close_when_idle())
        self._retiring[retiring] = old
        retiring.add_done_callback(self._retiring.pop)

    def watch_config(self) -> ConfigWatcher | None:
        if self.config_path is None:
            return None
        watcher = ConfigWatcher(self.config_path, self.apply, self.config.reload_interval)
        if self.config.reload_interval > 0:
            task = asyncio.create_task(watcher.watch())
            self._tasks.add(task)
        return watcher

    async def stop(self) -> None:
        """Stop accepting, end open streams cleanly, give unary calls the grace period."""
        grace = self.config.shutdown_grace
        for task in self._tasks:
            task.cancel()
        for runner in self._runners[:1]:
            for site in list(runner.sites):
                await site.stop()
        if self._holder is not None:
            await self._holder.streams.drain(grace)
        if self._grpc is not None:
            await self._grpc.stop(grace)
            self._grpc = None
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        if self._holder is not None:
            await self._holder.current.close()
            self._holder = None
        for retiring, gateway in list(self._retiring.items()):
            retiring.cancel()
            await gateway.close()
        if self._session is not None:
            await self._session.close()
        if self.store is not None:
            await self.store.close()
            self.store = None
        if self._traced:
            self._traced = False
            await asyncio.to_thread(tracing.shutdown)  # flushes spans, maybe to ourselves


async def serve(config: GatewayConfig, config_path: Path | None = None,
                worker: WorkerRole | None = None) -> int:
    """Run one gateway process until SIGTERM or SIGINT: the only one, or ``worker``."""
    configure_logging(config.log_level, None if worker is None else worker.index)
    raise_open_files_limit()
    server = Server(config, config_path, None if worker is None else worker.index)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = server.watch_config()
    if watcher is not None:
        loop.add_signal_handler(signal.SIGHUP,
                                lambda: loop.create_task(watcher.reload("SIGHUP")))
    if worker is not None:
        worker.ready()  # after the handlers: the supervisor may signal it from now on
    await stop.wait()
    log.info("shutting down", grace_seconds=server.config.shutdown_grace,
             open_streams=len(server.holder.streams))
    await server.stop()
    log.info("stopped")
    return 0
