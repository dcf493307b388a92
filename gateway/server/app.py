"""Building and running the gateway's servers."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import structlog
from aiohttp import web

from gateway.config.models import GatewayConfig
from gateway.config.state import describe_store
from gateway.egress.http import client_session
from gateway.ingress import cards, jsonrpc, rest
from gateway.ingress import relay as relay_endpoint
from gateway.ingress.common import GATEWAY_KEY
from gateway.ingress.connections import (
    ConnectionGuard,
    GuardedSite,
    raise_open_files_limit,
    track_requests,
)
from gateway.ingress.errors import answer_in_dialect
from gateway.ingress.fast_lane import lane_for
from gateway.ingress.grpc import start_grpc_server
from gateway.observability import metrics, tracing
from gateway.observability.logs.access import ACCESS_LOGGER, AccessLogger
from gateway.observability.observe import configure_logging
from gateway.pipeline.core import Gateway
from gateway.pipeline.holder import GatewayHolder
from gateway.preflight.startup import binding, check_listeners_free, start_failure
from gateway.server.admin import add_admin_routes, build_admin_app
from gateway.server.heap import settle_after_start
from gateway.server.lifecycle import ConfigWatcher
from gateway.state import KeptOwner, Store, open_store
from gateway.state.retention import prune_forever
from gateway.tls.context import ReloadingServerContext, grpc_server_credentials
from gateway.workers.worker import WorkerRole
from translators.rest_routes import JSONRPC_TENANT_ROUTES

log = structlog.get_logger("a2a_gateway")


def split_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def build_http_app(holder: GatewayHolder) -> web.Application:
    # Bodies are read by the codecs, bounded by max_body_bytes (ingress/common.read_body).
    app = web.Application(middlewares=[track_requests, answer_in_dialect])
    app[GATEWAY_KEY] = holder
    add_admin_routes(app, probes_only=holder.current.config.listen.admin is not None)
    app.router.add_post("/", jsonrpc.handle)
    for path in JSONRPC_TENANT_ROUTES:  # POST /{tenant}: JSON-RPC with the tenant in the path
        app.router.add_post(path, jsonrpc.handle)
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json",
                 "/{tenant}/.well-known/agent-card.json"):
        app.router.add_get(path, cards.handle)
    # Backends POST push notifications for relayed webhooks here (gateway/ingress/relay.py).
    app.router.add_post("/_relay/{sealed}", relay_endpoint.handle)
    # Everything else goes through the REST router, which also hands `POST /{tenant}`
    # (JSON-RPC with the tenant in the path) back to the JSON-RPC codec. Any verb and any
    # path (newlines included): what no route serves is refused in the path's dialect.
    app.router.add_route("*", r"/{path:[\s\S]*}", rest.handle)
    return app


def _loopback(address: str) -> bool:
    host = split_host_port(address)[0]
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")


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
        self.connections: ConnectionGuard | None = None
        self._traced = False  # this server turned tracing on (gateway/observability/tracing.py)
        self.store: Store | None = None

    @property
    def _shared_state(self) -> bool:
        """Whether other processes serve from this store too (workers of this gateway, or
        replicas sharing Redis): then rate limits are kept in it."""
        return self.worker is not None or (self.store is not None
                                           and self.store.backend == "redis")

    def _kept_owners(self) -> Mapping[str, KeptOwner]:
        """What pruning keeps of the conversations of a task it drops, for the config
        serving now (none before it serves)."""
        return {} if self._holder is None else self._holder.current.migration.kept_owners()

    @property
    def holder(self) -> GatewayHolder:
        assert self._holder is not None, "the server is not started"
        return self._holder

    async def start(self) -> None:
        config = self.config
        if self.worker is None:  # alone: nothing holds the ports (workers: the supervisor)
            check_listeners_free(config)
        self._traced = tracing.configure(config.tracing)  # one tracer per process
        if config.demo_agent is not None and not self.worker:
            from gateway.demo.agent import start_demo_agent

            host, port = split_host_port(config.demo_agent.listen)
            with binding("demo_agent.listen", config.demo_agent.listen):
                self._runners.append(await start_demo_agent(host, port))
            log.info("demo agent started", listen=config.demo_agent.listen)
        self._session = client_session()
        self.store = open_store(config.state)
        log.info("state store opened", backend=self.store.backend,
                 where=describe_store(config.state))
        # Every replica and worker prunes on its own timer: pruning is idempotent
        # (state/retention.py).
        self._tasks.add(asyncio.create_task(
            prune_forever(self.store, config.state.retention.interval, self._kept_owners)))
        first = await _ready(Gateway(config, self._session, self.store,
                                     shared_state=self._shared_state))
        holder = GatewayHolder(first)
        self._holder = holder
        # Listeners open last: once they accept, every part behind them can serve.
        runner = web.AppRunner(build_http_app(holder), handler_cancellation=True,
                               access_log_class=AccessLogger, access_log=ACCESS_LOGGER,
                               shutdown_timeout=config.shutdown_grace,
                               keepalive_timeout=config.limits.idle_timeout)
        await runner.setup()
        host, port = split_host_port(config.listen.http)
        self.connections = ConnectionGuard(config.limits, holder.streams.openings)
        server_tls = config.auth.server_tls if config.auth is not None else None
        tls = None
        if server_tls is not None:
            tls = ReloadingServerContext(server_tls)
            self._spawn(tls.watch())  # rotated certificate files, without a restart
        shared = self.worker is not None
        self._runners.insert(0, runner)
        with binding("listen.http", config.listen.http):
            await GuardedSite(runner, host, port, self.connections,
                              lane_for(runner.app, config.limits) if config.fast_lane
                              else None, reuse_port=shared,
                              ssl_context=tls.context if tls else None).start()
        if config.listen.admin:
            admin = web.AppRunner(build_admin_app(holder), access_log_class=AccessLogger,
                                  access_log=ACCESS_LOGGER)
            await admin.setup()
            self._runners.append(admin)
            with binding("listen.admin", config.listen.admin):
                await web.TCPSite(admin, *split_host_port(config.listen.admin),
                                  reuse_port=shared).start()
        if config.listen.grpc:
            with binding("listen.grpc", config.listen.grpc):
                self._grpc = await start_grpc_server(
                    lambda: holder.current, config.listen.grpc, holder.streams,
                    grpc_server_credentials(server_tls) if server_tls else None,
                    reuse_port=shared)
        unguarded = [t for t in config.tenants
                     if not (holder.current.auth and holder.current.auth.for_tenant(t)
                             .config.authenticates)]
        if unguarded and not all(_loopback(a) for a in (config.listen.http, config.listen.grpc)
                                 if a):
            log.warning("listening beyond loopback with tenants anyone can call (no auth "
                        "configured for them; README \"Security\")", tenants=unguarded)
        log.info("gateway listening", http=config.listen.http, grpc=config.listen.grpc,
                 admin=config.listen.admin, tls=server_tls is not None,
                 tenants=sorted(config.tenants), default_tenant=config.default_tenant)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """A background task of this server, cancelled at stop."""
        task = asyncio.create_task(work)
        self._tasks.add(task)

    async def apply(self, config: GatewayConfig) -> None:
        """Swap in a new config. Calls in flight finish on the gateway they started on;
        the listeners and the demo agent stay as they are (changing them needs a
        restart, and the log says so)."""
        # The store stays open across reloads; what the task index does with it
        # (state.tasks) belongs to the gateway being swapped in.
        if (config.listen, config.demo_agent, config.tracing,
                config.state.model_copy(update={"tasks": None}), config.workers) != (
                self.config.listen, self.config.demo_agent, self.config.tracing,
                self.config.state.model_copy(update={"tasks": None}), self.config.workers):
            log.warning("listen, demo_agent, tracing, state (but state.tasks) and workers "
                        "changes take effect at the next restart")
        assert self._session is not None
        old = self.holder.current
        new = await _ready(Gateway(config, self._session, self.store, previous=old,
                                   shared_state=self._shared_state))
        self.holder.current = new
        self.config = config
        # The replaced gateway's backends and relay close when its last call ends.
        retiring = asyncio.create_task(old.close_when_idle())
        self._retiring[retiring] = old
        retiring.add_done_callback(self._retiring.pop)

    def config_watcher(self) -> ConfigWatcher | None:
        """A watcher of the config file, not yet watching; what the file holds now is
        taken as what is applied (make it before start: an edit made while the gateway
        starts is then seen as one)."""
        if self.config_path is None:
            return None
        return ConfigWatcher(self.config_path, self.apply, self.config.reload_interval)

    def watch_config(self, watcher: ConfigWatcher | None = None) -> ConfigWatcher | None:
        """Watch the config file (every `reload_interval`), with ``watcher`` or a new one."""
        watcher = watcher or self.config_watcher()
        if watcher is not None and self.config.reload_interval > 0:
            self._spawn(watcher.watch())
        return watcher

    async def stop(self) -> None:
        """Stop accepting, end open streams cleanly (reading on the journaled ones whose
        task goes on), give unary calls the grace period: one period for all of it,
        counted from here (README "Shutdown")."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.shutdown_grace

        def left() -> float:
            return max(0.0, deadline - loop.time())

        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for runner in self._runners[:1]:
            for site in list(runner.sites):
                await site.stop()
        if self.connections is not None:
            self.connections.close_idle()
        if self._holder is not None:
            # Journaled streams whose task goes on end for their clients now and are read
            # on into the journal until the deadline (docs/streams.md, "At shutdown").
            await self._holder.streams.drain(left())
        if self.connections is not None:
            await self.connections.drain(left())
        if self._grpc is not None:
            # Stopped last, once the drain ended the streams: stopped while a stream still
            # wrote its last event, the client got "Socket closed (GOAWAY received)" instead
            # of the stream's end. Its unary calls in flight get what is left of the grace.
            await self._grpc.stop(left())
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
        metrics.flush()  # the last calls' counts, before this worker's loop ends
        if self._traced:
            self._traced = False
            await asyncio.to_thread(tracing.shutdown)  # flushes spans, maybe to ourselves


async def serve(config: GatewayConfig, config_path: Path | None = None,
                worker: WorkerRole | None = None) -> int:
    """Run one gateway process until SIGTERM or SIGINT: the only one, or ``worker``."""
    configure_logging(config.log, None if worker is None else worker.index)
    raise_open_files_limit()
    server = Server(config, config_path, None if worker is None else worker.index)
    watcher = server.config_watcher()  # before the listeners open (see config_watcher)
    try:
        await server.start()
    except Exception as exc:
        # One line naming the YAML path (a port in use, a file gone since preflight),
        # after closing what had been opened.
        with contextlib.suppress(Exception):
            await server.stop()
        raise start_failure(config, exc) from None
    settle_after_start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server.watch_config(watcher)
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


async def _ready(gateway: Gateway) -> Gateway:
    """``gateway``, ready to serve: its credentials primed (a JWK set file that cannot be
    used stops a start and refuses a reload), its migrations' shares the store's. One
    that fails is closed here: it never serves, so nothing else would close it (its
    sessions, and its relay worker, which would read a store the stop closes)."""
    try:
        if gateway.auth is not None:
            await gateway.auth.prime()
        await gateway.migration.adopt()
    except BaseException:
        await gateway.close()
        raise
    return gateway
