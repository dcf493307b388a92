"""A real redis-server on a free loopback port (no fakes), and the two stores.

`make redis` installs redis-server; without root, point A2A_TEST_REDIS_SERVER at a
redis-server binary (README "State")."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from helpers import free_port
from redis_support import RedisProcess, ping, redis_binary

from gateway.state import RetentionConfig, Store
from gateway.state.redis_store import RedisStore
from gateway.state.sqlite_store import SqliteStore


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="a2a-redis-")
    proc = subprocess.Popen(
        [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer PING on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    redis = RedisProcess(tmp_path)
    redis.start()
    yield redis
    redis.kill()


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
