"""The Redis store's connections are bounded and wait (state.max_connections): more
calls at once than connections queue for one, within `state.timeout`, instead of being
refused. redis-py's own default pool refuses past 100 ("Too many connections"): more than
100 streams journaling at once lost their ids on a real redis-server."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from gateway.config.state import SentinelConfig, StateConfig
from gateway.state.journal import JournalLimits
from gateway.state.redis_client import connect_sentinel
from gateway.state.redis_store import RedisStore

LIMITS = JournalLimits(1000, 1 << 20, 60.0, 600.0)


async def test_more_journal_appends_at_once_than_connections_all_land(redis_url: str) -> None:
    store = RedisStore(redis_url, f"test-{uuid.uuid4().hex[:8]}:",
                       max_connections=StateConfig().max_connections)
    try:
        streams = 150  # at once: each holds a connection until its answer
        seqs = await asyncio.gather(*(
            store.journal_append("t1", f"task-{i}", [b'{"chunk":%d}' % i], False, LIMITS, None)
            for i in range(streams)))
        assert seqs == [[1]] * streams
        reads = await asyncio.gather(*(store.journal_read("t1", f"task-{i}", 0, 10)
                                       for i in range(streams)))
        assert [[entry.data for entry in read.entries] for read in reads] == [
            [b'{"chunk":%d}' % i] for i in range(streams)]
        pool = store._conn.client.connection_pool
        assert isinstance(pool, aioredis.BlockingConnectionPool)
        assert pool.max_connections == 64
    finally:
        await store.close()


async def test_the_sentinels_primary_pool_is_bounded_and_waits_too() -> None:
    # No connection is made until a command: the pool's kind and bound are the point.
    connected = connect_sentinel(
        SentinelConfig(hosts=["127.0.0.1:1"], service="gw"), "sentinel gw", password=None,
        sentinel_password=None, timeout=1.5, max_connections=7)
    try:
        pool = connected.client.connection_pool
        assert isinstance(pool, aioredis.BlockingConnectionPool)
        assert (pool.max_connections, pool.timeout) == (7, 1.5)
    finally:
        await connected.close()
