"""The server's use of the store: pruning on a timer while it runs, stopped with it."""

from __future__ import annotations

from pathlib import Path

from gateway.config.models import parse_config
from gateway.server.app import Server
from gateway.state import TaskQuery, TaskRecord
from tests.support.helpers import free_port
from tests.support.waiting import wait_until

T0 = 1_700_000_000.0


async def test_server_prunes_on_its_timer(tmp_path: Path) -> None:
    config = parse_config({
        "listen": {"http": f"127.0.0.1:{free_port()}"},
        "tenants": {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}},
        "state": {"path": str(tmp_path / "state.db"),
                  "retention": {"max_age": 0, "max_tasks": 2, "interval": 0.05}}})
    server = Server(config)
    await server.start()
    try:
        store = server.store
        assert store is not None
        for i in range(5):
            await store.record_task(TaskRecord("t", f"task-{i}", "c", "TASK_STATE_WORKING",
                                               T0 + i, T0 + i))
        async def pruned() -> bool:
            return (await store.list_tasks(TaskQuery("t"))).total_size == 2

        await wait_until(pruned, "pruned to 2 tasks")
        page = await store.list_tasks(TaskQuery("t"))
        assert [r.task_id for r in page.records] == ["task-4", "task-3"]
    finally:
        await server.stop()
    assert server.store is None  # closed, and the pruner with it
