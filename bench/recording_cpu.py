"""The task index's CPU per call, measured in this process (part of bench/recording.py).

A load through a gateway on a shared machine varies by tens of percent from one window to
the next; this measures the recording alone, where nothing else competes: the same
observations a call hands the index (a translated answer's Task, or a passed-through
answer's bytes with the document read from them, each a new task), then the writer's batches to a real store, SQLite (its
thread counted) or Redis. CPU time of the whole process over both, per call.

Each call is a SendMessage, which creates its task and waits for its record to be
written (read-your-writes, issue 27): AT_ONCE calls at a time, as that many connections
would, so they share writes as under load. `<path>.<store>-bg` is the same translated
answer recorded in the background (as a GetTask's is, and as every answer was before):
the difference is what waiting costs in CPU.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from a2a.types import a2a_pb2 as pb

from bench import nginx
from gateway.call import Call, CallContext, ClientFacts
from gateway.config.models import parse_config
from gateway.state import Store
from gateway.state.redis_store import RedisStore
from gateway.state.sqlite_store import SqliteStore
from gateway.tasks.index import TaskIndex
from translators import operations as ops
from translators.dialects.base import WireRequest
from translators.dialects.jsonrpc import JSONRPC_V10

CALLS = 20_000
AT_ONCE = 32  # calls waiting for their writes at one time (bench/peers.py's connections)


def _calls(path: str, n: int, op: str = ops.SEND) -> list[tuple[Call, Any]]:
    out = []
    for i in range(n):
        ctx = CallContext(ClientFacts("JSONRPC"), "1.0", tenant="t")
        ctx.outcome.backend_binding = "JSONRPC"
        ctx.outcome.backend_version = "0.3" if path == "translated" else "1.0"
        call = Call(ops.BY_NAME[op], pb.SendMessageRequest(), ctx, JSONRPC_V10)
        if path == "translated":
            answer: Any = pb.SendMessageResponse(task=pb.Task(
                id=f"t-{i}", context_id="c-1",
                status=pb.TaskStatus(state=pb.TASK_STATE_COMPLETED)))
        else:
            # As the backend client hands it on: the bytes, and the document it read
            # when it checked them (that read is the call's, index or not).
            raw = nginx.ANSWER_V10.replace('"t-1"', f'"t-{i}"').encode()
            answer = JSONRPC_V10.backend(call.op, call.request, ctx.loss, wire=WireRequest(
                b"", rpc_id=1)).forwarded(200, "application/json", raw)
        out.append((call, answer))
    return out


async def _one(store: Store, path: str, n: int, background: bool = False) -> float:
    config = parse_config({"tenants": {"t": {"backend": {"url": "http://127.0.0.1:9/",
                                                         "version": "0.3"}}},
                           "state": {"path": ":memory:"}})
    index = TaskIndex(config, store)
    # The background variant: a GetTask's answer (translated: the same Task is read).
    calls = _calls(path, n, ops.GET_TASK if background else ops.SEND)

    async def answered(call: Call, answer: Any) -> None:
        written = index.answered(call, answer)
        if written is not None:
            await written

    started = time.process_time()
    for start in range(0, n, AT_ONCE):
        await asyncio.gather(*(answered(call, answer)
                               for call, answer in calls[start:start + AT_ONCE]))
    await index.close()  # everything written
    return (time.process_time() - started) / n * 1e6


async def measure(redis_port: int | None, n: int = CALLS) -> dict[str, float]:
    """µs of CPU per recorded call, by "<path>.<store>"."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="a2a-bench-index-cpu-") as tmp:
        for path in ("translated", "same"):
            variants = [False, True] if path == "translated" else [False]
            for background in variants:
                suffix = "-bg" if background else ""
                sqlite = SqliteStore(str(Path(tmp) / f"{path}{suffix}.db"))
                out[f"{path}.sqlite{suffix}"] = await _one(sqlite, path, n, background)
                await sqlite.close()
                if redis_port is not None:
                    redis = RedisStore(f"redis://127.0.0.1:{redis_port}/0",
                                       f"cpu-{path}{suffix}:")
                    out[f"{path}.redis{suffix}"] = await _one(redis, path, n, background)
                    await redis.close()
    return out
