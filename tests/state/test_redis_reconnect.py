"""A Redis that restarts (stopped, then started again on the same port) leaves the
gateway's pooled connections dead: the first step after it is back must still succeed
(one retry on a fresh connection), and every failed step logs its cause."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from structlog.testing import capture_logs

from gateway.state import StoreError
from gateway.state.redis_store import RedisStore
from tests.support.helpers import MakeGateway, free_port
from tests.support.redis_process import RedisProcess

POOL = 4  # connections the pool holds when the server goes away


@pytest.fixture
def redis() -> Iterator[RedisProcess]:
    server = RedisProcess(free_port()).start()
    yield server
    server.close()


@pytest.fixture
async def store(redis: RedisProcess) -> AsyncIterator[RedisStore]:
    store = RedisStore(redis.url, "reconnect:")
    yield store
    await store.close()


async def _fill_pool(store: RedisStore) -> None:
    # Steps at once take a connection each: the pool then holds POOL of them.
    await asyncio.gather(*(store.take_tokens(f"k{i}", 1.0, 10.0) for i in range(POOL)))


async def test_the_first_steps_after_a_restart_succeed(store: RedisStore,
                                                       redis: RedisProcess) -> None:
    await _fill_pool(store)
    redis.stop()
    redis.start()
    with capture_logs() as logs:
        # The first one alone, then as many at once as there are dead connections.
        assert await store.get_task("t", "nothing") is None
        taken = await asyncio.gather(*(store.take_tokens(f"k{i}", 1.0, 10.0)
                                       for i in range(POOL)))
    assert taken == [(True, 0.0)] * POOL
    assert [line for line in logs if line["event"] == "state store error"] == []


async def test_a_failed_step_logs_its_cause(store: RedisStore, redis: RedisProcess) -> None:
    await _fill_pool(store)
    redis.stop()
    with capture_logs() as logs, pytest.raises(StoreError) as failed:
        await store.get_task("t", "x")
    assert str(failed.value).startswith(f"Redis store {redis.url}: Error 111")
    errors = [line for line in logs if line["event"] == "state store error"]
    assert len(errors) == 1 and errors[0]["log_level"] == "warning"
    assert errors[0]["store"] == redis.url and errors[0]["error"] == "ConnectionError"
    assert f"127.0.0.1:{redis.port}" in errors[0]["cause"]
    redis.start()
    assert await store.get_task("t", "x") is None


async def test_list_tasks_right_after_a_restart(make_gateway: MakeGateway, demo_agent: str,
                                                redis: RedisProcess) -> None:
    # ListTasks toward a v0.3 agent reads the task index: it used to fail once ("the task
    # index cannot be read now") on a connection pooled before the restart.
    gw = await make_gateway({"t": {"backend": {"url": demo_agent, "version": "0.3"}}},
                            state={"backend": "redis", "url": redis.url,
                                   "key_prefix": "list:"})
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    headers = {"A2A-Version": "1.0"}
    async with aiohttp.ClientSession() as http:
        for _ in range(2):
            async with http.post(gw + "/t", json=body, headers=headers) as resp:
                assert "result" in await resp.json()
        redis.stop()
        redis.start()
        async with http.post(gw + "/t", json=body, headers=headers) as resp:
            answer = await resp.json()
    assert answer["result"]["tasks"] == [], answer
