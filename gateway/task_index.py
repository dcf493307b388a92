"""The task index as the pipeline sees it (README "State"): every task an answer, a stream
event or a relayed webhook shows is recorded (tenant, ids, state, status timestamp, the
principal that created it, the backend's dialect); a principal may reach only its own
tasks when ownership is on; ListTasks is answered from the index where the backend cannot
answer it (task_list.py).

Recording never holds a call up: observations go to a :class:`TaskRecorder`, which
writes them in the background.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import GatewayConfig
from gateway.state import Store, StoreError
from gateway.task_record import TaskRecorder, records_of
from translators import operations as ops
from translators.dialects.base import WireAnswer
from translators.errors import a2a_error
from translators.task_facts import STATEFUL_EVENTS, TASK_ANSWERS, facts_of
from translators.versions import V03

# The calls that create a task or add to one: their principal becomes its owner.
_CREATING = frozenset({ops.SEND, ops.STREAM})
# The client binding of the GetTask calls ListTasks from the index makes (task_list.py):
# it records what they find itself, knowing what it had.
REFRESH_BINDING = "task-index"


def task_of(call: Call) -> str:
    """The task a call acts on ("" for none: a new task, ListTasks, the card)."""
    request: Any = call.request
    if isinstance(request, pb.SendMessageRequest):
        return str(request.message.task_id)
    if isinstance(request, pb.GetTaskRequest | pb.CancelTaskRequest | pb.SubscribeToTaskRequest):
        return str(request.id)
    if isinstance(request, pb.TaskPushNotificationConfig | pb.GetTaskPushNotificationConfigRequest
                  | pb.ListTaskPushNotificationConfigsRequest
                  | pb.DeleteTaskPushNotificationConfigRequest):
        return str(request.task_id)
    return ""


def backend_label(call: Call) -> str:
    """The backend's dialect, never its address (what the index keeps of it)."""
    return f"{call.ctx.outcome.backend_binding}/{call.ctx.outcome.backend_version}"


class TaskIndex:
    """One gateway config's view of the index; off (records nothing, refuses nothing)
    without a store or with `state.tasks.record: false`."""

    def __init__(self, config: GatewayConfig, store: Store | None) -> None:
        settings = config.state.tasks
        self.settings = settings
        self.store = store if settings.record else None
        self.recorder = (TaskRecorder(store, settings.queue, settings.batch, settings.linger)
                         if store is not None and settings.record else None)
        self._owned = {name: settings.ownership if t.task_ownership is None
                       else t.task_ownership for name, t in config.tenants.items()}

    # ------------------------------------------------------------ recording

    def _owner(self, call: Call) -> str | None:
        """The owner a call's tasks get: its principal, for a call that creates tasks."""
        principal = call.ctx.principal
        return principal.key if principal is not None and call.op.name in _CREATING else None

    def answered(self, call: Call, result: ProtoMessage | WireAnswer | None) -> None:
        """A unary answer (canonical, or passed through as the backend sent it)."""
        if self.recorder is None or result is None or call.op.name not in TASK_ANSWERS \
                or call.ctx.client_binding == REFRESH_BINDING:
            return
        if isinstance(result, WireAnswer):
            if 200 <= result.status < 300:
                dialect = call.dialect
                self.recorder.add_wire((call.ctx.tenant or "", self._owner(call),
                                        backend_label(call), dialect.binding,
                                        dialect.version, call.op.name, result.body,
                                        result.document))
            return
        self._add(call.ctx.tenant or "", self._owner(call), backend_label(call), result)

    def streamed(self, call: Call, item: pb.StreamResponse) -> None:
        """One event of a stream or a subscription. Only a Task and a status update show
        a task's state: the artifact chunks and messages that make most of a stream are
        passed over before anything is looked up for them."""
        if self.recorder is not None and item.WhichOneof("payload") in STATEFUL_EVENTS:
            self._add(call.ctx.tenant or "", self._owner(call), backend_label(call), item)

    def relayed(self, tenant: str, backend: str, event: pb.StreamResponse) -> None:
        """A webhook a backend posted to the push relay (no principal: the first owner
        recorded stays, see Store.record_task)."""
        if self.recorder is not None:
            self._add(tenant, None, backend, event)

    def _add(self, tenant: str, owner: str | None, backend: str,
             message: ProtoMessage) -> None:
        assert self.recorder is not None
        facts = facts_of(message)
        if facts:
            self.recorder.add_all(records_of(tenant, owner, backend, facts, time.time()))

    # ------------------------------------------------------------ ownership, listing

    def lists(self, call: Call, backend_version: str | None) -> bool:
        """Whether ListTasks is answered from the index: the backend has none (v0.3), or
        the call sees only its principal's tasks (which no backend can filter)."""
        return call.op.name == ops.LIST_TASKS and (
            backend_version == V03 or self.owner_scope(call) is not None)

    def owner_scope(self, call: Call) -> str | None:
        """The owner a call is confined to: its principal's key when ownership applies
        to its tenant, else None (every task of the tenant)."""
        principal = call.ctx.principal
        if principal is None or self.recorder is None \
                or not self._owned.get(call.ctx.tenant or "", False):
            return None
        return str(principal.key)

    async def admit(self, call: Call) -> None:
        """Refuse a call on a task its principal does not own, as if the task did not
        exist (TaskNotFoundError: nothing says whose it is). A task the index holds no
        owner for (not created through the gateway with authentication on) is nobody's:
        refused too (README "State")."""
        owner = self.owner_scope(call)
        task_id = task_of(call)
        if owner is None or not task_id:
            return
        if await self.owner_of(call.ctx.tenant or "", task_id) != owner:
            raise a2a_error("TaskNotFoundError", f"task {task_id[:64]!r} not found",
                            task_id=task_id[:64])

    async def owner_of(self, tenant: str, task_id: str) -> str | None:
        """The task's first recorded owner, including what is not written yet."""
        assert self.recorder is not None and self.store is not None
        try:
            stored = await self.store.get_task(tenant, task_id)
            if stored is None or stored.owner is None:
                pending = self.recorder.pending(tenant, task_id)
                if pending is not None and pending.owner is not None:
                    return pending.owner
                # A passed-through answer is read by the writer: let it catch up once.
                await self.recorder.flush()
                stored = await self.store.get_task(tenant, task_id)
            if stored is None or stored.owner is None:
                # Another worker or replica may have just created it and not written it
                # yet (it lingers up to `linger`): ask once more after that.
                await asyncio.sleep(2 * self.settings.linger + 0.01)
                stored = await self.store.get_task(tenant, task_id)
        except StoreError as exc:
            raise a2a_error("InternalError", "the task index cannot be read now") from exc
        return None if stored is None else stored.owner

    async def close(self) -> None:
        if self.recorder is not None:
            await self.recorder.close()
