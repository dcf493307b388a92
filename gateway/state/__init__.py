"""Shared state (README "State"): the task index, the relay's replay and spent-seal
facts, rate-limit buckets. :func:`open_store` makes the configured one; the rest of the
gateway sees only :class:`Store`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from gateway.config.state import RetentionConfig, StateConfig
from gateway.state.base import (
    BadPageToken,
    KeptOwner,
    Store,
    StoreError,
    TaskPage,
    TaskQuery,
    TaskRecord,
    store_unavailable,
)

__all__ = ["BadPageToken", "KeptOwner", "RetentionConfig", "StateConfig", "Store", "StoreError",
           "TaskPage", "TaskQuery", "TaskRecord", "open_store", "store_unavailable"]


def open_store(config: StateConfig, environ: Mapping[str, str] | None = None) -> Store:
    """The configured store. Redis connects lazily (``ping`` checks it); SQLite opens its
    file now (StoreError when it cannot)."""
    if config.backend == "redis":
        from gateway.config.state import describe_store
        from gateway.state.redis_client import connect_sentinel
        from gateway.state.redis_store import RedisStore

        env = os.environ if environ is None else environ
        password = env.get(config.password_env) if config.password_env else None
        sentinel = config.sentinel
        if sentinel is None:
            assert config.url is not None
            return RedisStore(config.url, config.key_prefix, config.retention,
                              password=password, timeout=config.timeout,
                              max_connections=config.max_connections)
        sentinel_password = env.get(sentinel.sentinel_password_env) \
            if sentinel.sentinel_password_env else None
        connected = connect_sentinel(sentinel, describe_store(config), password=password,
                                     sentinel_password=sentinel_password,
                                     timeout=config.timeout,
                                     max_connections=config.max_connections)
        return RedisStore(connected, config.key_prefix, config.retention)
    from gateway.state.sqlite_store import SqliteStore

    return SqliteStore(config.path, config.retention)
