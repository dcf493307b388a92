"""A real redis-server on a free loopback port (no fakes), and the two stores.

`make redis` installs redis-server; without root, point A2A_TEST_REDIS_SERVER at a
redis-server binary (README "State")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from gateway.state import RetentionConfig, Store
from gateway.state.redis_store import RedisStore
from gateway.state.sqlite_store import SqliteStore
from tests.support.helpers import free_port, redis_server
from tests.support.redis_process import RedisProcess


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    """A durable redis-server of the test's own, which it may kill and start again."""
    redis = RedisProcess(free_port(), durable=True).start()
    yield redis
    redis.close()


MakeStore = Callable[..., Store]


@pytest.fixture(params=["sqlite", "redis"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MakeStore]:
    """Stores of one kind sharing one place (one SQLite file, or one Redis key prefix),
    as two gateway workers or replicas would; closed after the test."""
    stores: list[Store] = []
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""

    def make(retention: RetentionConfig | None = None) -> Store:
        store: Store
        if request.param == "redis":
            store = RedisStore(url, prefix, retention)
        else:
            store = SqliteStore(str(tmp_path / "state.db"), retention)
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
async def store(make_store: MakeStore) -> Store:
    return make_store()
