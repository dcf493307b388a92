"""In-memory task state, event fan-out and background work of the demo agent."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections import deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.demo.push import PushSender
from gateway.demo.variants import check_variant, vary
from gateway.demo.wire import (
    JSON,
    TASK_NOT_CANCELABLE,
    TERMINAL_STATES,
    RpcError,
    agent_message,
    ends_stream,
    is_final_status,
    new_id,
    now_iso,
    task_not_found,
)

logger = logging.getLogger(__name__)

# None in a subscriber queue means "the agent is shutting down, stop waiting".
EventQueue = asyncio.Queue[JSON | None]


@dataclass(eq=False)
class TaskRecord:
    task: JSON
    push_configs: dict[str, JSON] = field(default_factory=dict)
    subscribers: set[EventQueue] = field(default_factory=set)
    worker: asyncio.Task[None] | None = None
    # What an `input: X` task is waiting to be told about (the X).
    topic: str | None = None

    @property
    def id(self) -> str:
        task_id: str = self.task["id"]
        return task_id

    @property
    def state(self) -> str:
        state: str = self.task["status"]["state"]
        return state


class Subscription:
    """Events for one stream: some known events first, then live ones from a task.

    It subscribes on creation, not on first read, because the caller has to send
    HTTP headers (an await) before reading, and a worker may publish meanwhile.
    """

    def __init__(self, first: Iterable[JSON], record: TaskRecord | None = None) -> None:
        self._first = deque(first)
        self._record = record
        self._queue: EventQueue = asyncio.Queue()
        self.finished = False
        if record is not None:
            record.subscribers.add(self._queue)

    async def next(self, timeout: float | None = None) -> JSON | None:
        """The next event, or None when `timeout` passed or the stream just finished."""
        if self._first:
            event: JSON | None = self._first.popleft()
        elif self._record is None:
            event = None
        else:
            try:
                event = await asyncio.wait_for(self._queue.get(), timeout)
            except TimeoutError:
                return None
        if event is None or ends_stream(event):
            self.finished = True
            self.close()
        return event

    def close(self) -> None:
        if self._record is not None:
            self._record.subscribers.discard(self._queue)


class Engine:
    def __init__(self, push: PushSender, answer_variant: str | None = None) -> None:
        self.push = push
        # gateway.demo.variants: how the first artifact of every task is changed, if at all.
        self.answer_variant = check_variant(answer_variant)
        self._tasks: dict[str, TaskRecord] = {}
        self._workers: set[asyncio.Task[None]] = set()

    def records(self) -> list[TaskRecord]:
        """Every task the agent knows, oldest first (v1.0 ListTasks reads them)."""
        return list(self._tasks.values())

    def get(self, task_id: str) -> TaskRecord:
        record = self._tasks.get(task_id)
        if record is None:
            raise task_not_found(task_id)
        return record

    def create_task(self, message: JSON, push_config: JSON | None) -> TaskRecord:
        task_id = new_id()
        context_id = message.get("contextId") or new_id()
        message["taskId"], message["contextId"] = task_id, context_id
        task: JSON = {
            "kind": "task",
            "id": task_id,
            "contextId": context_id,
            "status": {"state": "submitted", "timestamp": now_iso()},
            "history": [message],
        }
        record = TaskRecord(task)
        self._tasks[task_id] = record
        if push_config is not None:
            self.add_push_config(record, push_config)
            # The webhook should see the task from its first state, like a stream does.
            self.push.enqueue(record.push_configs.values(), self.snapshot(record))
        return record

    def add_push_config(self, record: TaskRecord, config: JSON) -> JSON:
        config = {**config, "id": config.get("id") or record.id}
        record.push_configs[config["id"]] = config
        return config

    def snapshot(self, record: TaskRecord, history_length: int | None = None) -> JSON:
        task = copy.deepcopy(record.task)
        if history_length:
            task["history"] = task["history"][-history_length:]
        return task

    def publish(self, record: TaskRecord, event: JSON) -> None:
        for queue in record.subscribers:
            queue.put_nowait(event)

    def set_status(self, record: TaskRecord, state: str, text: str | None = None) -> None:
        if record.state in TERMINAL_STATES:
            # A worker finishing just after a cancel must not resurrect the task.
            return
        status: JSON = {"state": state, "timestamp": now_iso()}
        if text is not None:
            message = agent_message(text, context_id=record.task["contextId"], task_id=record.id)
            status["message"] = message
            record.task["history"].append(copy.deepcopy(message))
        record.task["status"] = status
        self.publish(
            record,
            {
                "kind": "status-update",
                "taskId": record.id,
                "contextId": record.task["contextId"],
                "status": copy.deepcopy(status),
                "final": is_final_status(state),
            },
        )
        if record.push_configs:
            self.push.enqueue(record.push_configs.values(), self.snapshot(record))

    def add_artifact(
        self, record: TaskRecord, artifact: JSON, *, append: bool = False, last_chunk: bool = True
    ) -> None:
        artifacts: list[JSON] = record.task.setdefault("artifacts", [])
        if self.answer_variant is not None and not append and (
            not artifacts or artifacts[0]["artifactId"] == artifact["artifactId"]
        ):
            artifact = vary(self.answer_variant, artifact)
        existing = next((a for a in artifacts if a["artifactId"] == artifact["artifactId"]), None)
        if existing is not None and append:
            existing["parts"].extend(copy.deepcopy(artifact["parts"]))
        elif existing is not None:
            artifacts[artifacts.index(existing)] = copy.deepcopy(artifact)
        else:
            artifacts.append(copy.deepcopy(artifact))
        self.publish(
            record,
            {
                "kind": "artifact-update",
                "taskId": record.id,
                "contextId": record.task["contextId"],
                "artifact": copy.deepcopy(artifact),
                "append": append,
                "lastChunk": last_chunk,
            },
        )

    def start(self, record: TaskRecord, work: Coroutine[Any, Any, None]) -> None:
        # create_task only schedules: nothing runs until the caller awaits, so a
        # Subscription made right after this call still sees every event.
        worker = asyncio.create_task(self._guard(record, work), name=f"demo-task-{record.id}")
        record.worker = worker
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)
        # A worker cancelled before its first step never awaits `work`; closing it
        # avoids a "coroutine was never awaited" warning (a no-op otherwise).
        worker.add_done_callback(lambda _: work.close())

    async def _guard(self, record: TaskRecord, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        # A bug in a skill should fail that task, not leave its clients waiting forever.
        except Exception as exc:
            logger.exception("demo task %s crashed", record.id)
            self.set_status(record, "failed", f"internal error: {exc!r}")

    def cancel(self, record: TaskRecord) -> None:
        if record.state in TERMINAL_STATES:
            raise RpcError(
                TASK_NOT_CANCELABLE,
                "Task cannot be canceled",
                {"taskId": record.id, "state": record.state},
            )
        if record.worker is not None and not record.worker.done():
            record.worker.cancel()
        self.set_status(record, "canceled")

    async def shutdown(self) -> None:
        workers = list(self._workers)
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        # Release open streams and blocked sends so the HTTP server can drain quickly.
        for record in self._tasks.values():
            for queue in record.subscribers:
                queue.put_nowait(None)
