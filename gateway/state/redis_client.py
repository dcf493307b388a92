"""The Redis store's connection: one Redis named by a URL, or the primary that Redis
Sentinel names (docs/state.md, "Redis Sentinel and failover"), and how long a call keeps
trying while a failover is in progress."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError

from gateway.config.state import SentinelConfig

T = TypeVar("T")

# Retries of a step that met a closed connection (each on a fresh one): one replaces a
# dead pooled connection; more would only lengthen the wait while Redis is down.
RETRIES = 1

# What a failover looks like from a client: the old primary refuses or drops
# connections (ConnectionError; MasterNotFoundError, while the sentinels name none, is
# one too) or, demoted, refuses writes (ReadOnlyError). A timeout is not among them: the
# command may have run, and retrying it would double the bounded wait.
FAILOVER_ERRORS = (RedisConnectionError, ReadOnlyError)
# Back-off between two attempts while no primary answers: short at first (a dead pooled
# connection is replaced at once), never longer than this.
BACKOFF_FIRST, BACKOFF_CAP = 0.05, 0.5


@dataclass(frozen=True, slots=True)
class Connected:
    """The store's client, what else must be closed with it, and its failover policy."""

    client: aioredis.Redis
    where: str  # for logs: never a password
    sentinel: Sentinel | None = None
    failover_wait: float = 0.0  # seconds a call keeps retrying FAILOVER_ERRORS
    replica_acks: int = 0  # replicas a write waits for (WAIT), 0: none
    ack_timeout: float = 1.0

    async def close(self) -> None:
        await self.client.aclose()
        if self.sentinel is not None:
            await self.sentinel.aclose()


def _client_options(timeout: float, password: str | None) -> dict[str, Any]:
    # A pooled connection to a Redis that restarted is dead, and only its next use finds
    # out ("Connection closed by server"): a connection error is retried once on a fresh
    # connection, so the first call after a restart succeeds. Only connection errors (see
    # FAILOVER_ERRORS). The health check (a PING before a command on a connection idle
    # 30 s) retries the same way.
    retry = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), RETRIES,
                  supported_errors=(RedisConnectionError,))
    options: dict[str, Any] = {
        "decode_responses": True, "socket_timeout": timeout,
        "socket_connect_timeout": timeout, "health_check_interval": 30, "retry": retry,
        "retry_on_error": [RedisConnectionError]}
    if password is not None:
        options["password"] = password
    return options


class _WaitingSentinelPool(SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """The Sentinel's pool of the primary's connections, waiting for a free one as
    BlockingConnectionPool does (SentinelConnectionPool alone refuses past its cap)."""


def _pool_options(timeout: float, max_connections: int) -> dict[str, Any]:
    # A bounded pool that waits: redis-py's default pool refuses a command past its cap
    # ("Too many connections", 100), which more than 100 streams journaling at once
    # reached; here a command waits for a free connection, for `timeout` at most.
    return {"max_connections": max_connections, "timeout": timeout}


def connect_url(url: str, where: str, *, password: str | None,
                timeout: float, max_connections: int = 64) -> Connected:
    pool = aioredis.BlockingConnectionPool.from_url(
        url, **_client_options(timeout, password), **_pool_options(timeout, max_connections))
    return Connected(aioredis.Redis.from_pool(pool), where)


def connect_sentinel(config: SentinelConfig, where: str, *, password: str | None,
                     sentinel_password: str | None, timeout: float,
                     max_connections: int = 64) -> Connected:
    """redis-py's Sentinel client: each new connection asks the sentinels for the
    primary's address, and one to a demoted primary is dropped (its ReadOnlyError becomes
    a ConnectionError), so a retried call reaches the new primary."""
    tls: dict[str, Any] = {}
    if config.tls:
        tls["ssl"] = True
        if config.ssl_ca_certs is not None:
            tls["ssl_ca_certs"] = config.ssl_ca_certs
    options = {**_client_options(timeout, password), "db": config.db, **tls}
    # The sentinels' clients too retry a connection error once, at once: redis-py's
    # default (three times, with back-off of up to seconds) would hold every new
    # connection while the sentinels are down, past /readyz's timeout.
    if config.username is not None:
        options["username"] = config.username
    to_sentinels: dict[str, Any] = {"socket_timeout": timeout,
                                    "socket_connect_timeout": timeout,
                                    "retry": options["retry"], **tls}
    if config.sentinel_username is not None:
        to_sentinels["username"] = config.sentinel_username
    if sentinel_password is not None:
        to_sentinels["password"] = sentinel_password
    sentinel = Sentinel(  # type: ignore[no-untyped-call]
        config.addresses(), sentinel_kwargs=to_sentinels, **options)
    primary = sentinel.master_for(config.service, connection_pool_class=_WaitingSentinelPool,
                                  **_pool_options(timeout, max_connections))
    return Connected(primary, where, sentinel,
                     config.failover_wait, config.replica_acks, config.ack_timeout)


def describe_error(exc: Exception) -> str:
    """``exc`` in a line: redis-py's MasterNotFoundError appends the repr of every
    sentinel's client (hundreds of characters each); the sentinels are named elsewhere."""
    text = str(exc)
    if isinstance(exc, MasterNotFoundError) and " : " in text:
        return text.split(" : ", 1)[0] + " (no sentinel answered)"
    return text


async def through_failover(step: Callable[[], Awaitable[T]], wait: float,
                           on_retry: Callable[[Exception], None]) -> T:
    """``step()``, made again with back-off on FAILOVER_ERRORS until ``wait`` seconds
    have passed (then the last error is raised): a call made while the primary fails over
    waits for the new one rather than failing, within the bound."""
    deadline = time.monotonic() + wait
    pause = BACKOFF_FIRST
    while True:
        try:
            return await step()
        except FAILOVER_ERRORS as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            on_retry(exc)
            await asyncio.sleep(min(pause, left))
            pause = min(BACKOFF_CAP, pause * 2)
