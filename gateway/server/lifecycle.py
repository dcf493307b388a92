"""Running in production: readiness and config reload (the open streams that shutdown
drains: gateway/streams/registry.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import structlog

from gateway.config.models import ConfigError, GatewayConfig, load_config
from gateway.observability.metrics import RELOADS
from gateway.preflight import preflight
from gateway.routing.tenants import TenantRoute
from gateway.state import Store, StoreError

log = structlog.get_logger("a2a_gateway.lifecycle")


async def _tcp_probe(target: str, timeout: float) -> str | None:
    """None when the address accepts a connection, else "timeout" or "unreachable"."""
    parts = urlsplit(target if "://" in target else f"tcp://{target}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port), timeout)
    except TimeoutError:
        return "timeout"
    except (OSError, ValueError):
        return "unreachable"
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return None


async def tenant_readiness(route: TenantRoute, timeout: float) -> dict[str, Any]:
    """Ready when the backend's card can be read, or else when its address accepts a
    connection (a backend with no card is still a backend). The answer names what was
    checked and how it failed, never the backend's address: that goes to the log."""
    if route.card.url is not None:
        try:
            parsed = await asyncio.wait_for(route.card.get(), timeout)
        except TimeoutError:
            parsed = None
        if parsed is not None:
            return {"ready": True, "card": "ok"}
        if route.discovered:
            log.warning("tenant not ready", tenant=route.name, card=route.card.url,
                        error=route.card.last_error or "timeout")
            return {"ready": False, "card": "unavailable"}
    assert route.config.url is not None
    error = await _tcp_probe(route.config.url, timeout)
    if error is not None:
        log.warning("tenant not ready", tenant=route.name, backend=route.config.url,
                    error=error)
    return {"ready": error is None, "probe": error or "ok"}


async def store_readiness(store: Store, timeout: float) -> str:
    """"ok", or why the state store cannot serve (the log has the detail)."""
    try:
        await asyncio.wait_for(store.ping(), timeout)
    except (StoreError, TimeoutError) as exc:
        log.warning("state store not ready", backend=store.backend,
                    error=str(exc) or type(exc).__name__)
        return "unavailable"
    return "ok"


async def readiness(tenants: dict[str, TenantRoute], timeout: float,
                    store: Store | None = None) -> dict[str, Any]:
    names = list(tenants)
    results = await asyncio.gather(*(tenant_readiness(tenants[n], timeout) for n in names))
    detail = dict(zip(names, results, strict=True))
    ready = all(r["ready"] for r in results)
    report: dict[str, Any] = {"tenants": detail}
    status = "ready" if ready else "not ready"
    if store is not None:
        report["state"] = await store_readiness(store, timeout)
        # A store that cannot serve degrades this process, it does not stop it: calls
        # that need no state go on (docs/state.md, "A store outage"), and the store is
        # every replica's, so taking this one out of the load balancer would help no
        # call and stop those (degraded: HTTP 200).
        if ready and report["state"] != "ok":
            status = "degraded"
    return {"status": status, **report}


class ConfigWatcher:
    """Reloads the config on SIGHUP and when the file changes (polled: no extra
    dependency, and it works on ConfigMap mounts, whose symlink swaps inotify misses)."""

    def __init__(self, path: Path, apply: Callable[[GatewayConfig], Awaitable[None]],
                 interval: float) -> None:
        self.path = path
        self._apply = apply
        self._interval = interval
        self._stamp = self._read_stamp()
        self._lock = asyncio.Lock()

    def _read_stamp(self) -> tuple[float, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime, stat.st_size

    async def reload(self, reason: str) -> bool:
        """Load the file and apply it; on any failure the previous config keeps serving
        (and this watcher keeps watching)."""
        async with self._lock:
            self._stamp = self._read_stamp()
            try:
                config = load_config(self.path)
                preflight(config)
                await self._apply(config)
            except Exception as exc:  # ConfigError, or building the new gateway failed
                RELOADS.labels("refused").inc()
                error = str(exc) if isinstance(exc, ConfigError) else \
                    f"{type(exc).__name__}: {exc}"
                log.error("config reload refused; the previous config keeps serving",
                          reason=reason, error=error)
                return False
            RELOADS.labels("ok").inc()
            log.info("config reloaded", reason=reason, tenants=sorted(config.tenants))
            return True

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            if self._read_stamp() != self._stamp:
                await self.reload("file changed")
