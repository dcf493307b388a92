"""Fields a client would lose from the agent's answers.

A rich canonical answer is first passed through the backend's dialect both ways (encoded
as the backend would send it, read back as the gateway reads it): what remains is what
this backend can send at all. It is then encoded for the client's dialect; the loss
report of that last step is what the client would not see.
"""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.dialects.contract import Dialect
from translators.errors import A2AError
from translators.loss import LossReport

ANSWERED_OPS = (ops.SEND, ops.GET_TASK)


def rich_task() -> pb.Task:
    task = pb.Task(id="t1", context_id="c1")
    task.status.state = pb.TASK_STATE_WORKING
    status = task.status.message
    status.message_id, status.role = "m2", pb.ROLE_AGENT
    status.parts.add(text="working")
    status.reference_task_ids.append("t0")
    artifact = task.artifacts.add(artifact_id="a1", name="result")
    artifact.parts.add(text="hello")
    data = artifact.parts.add()
    data.data.list_value.values.add(number_value=1)  # not an object
    artifact.parts.add(raw=b"\x00\x01", filename="b.bin", media_type="application/octet-stream")
    artifact.parts.add(url="https://files.example/y", filename="y")
    artifact.metadata.update({"k": 1})
    task.metadata.update({"m": 1})
    asked = task.history.add(message_id="m1", role=pb.ROLE_USER, reference_task_ids=["t0"])
    asked.parts.add(text="question")
    return task


def _answer_for(op: str) -> ProtoMessage:
    return pb.SendMessageResponse(task=rich_task()) if op == ops.SEND else rich_task()


def _encode(dialect: Dialect, op: ops.Operation, result: ProtoMessage | None,
            loss: LossReport, request_id: str | int | None = 1) -> bytes:
    """An answer as ``dialect`` sends it to its client."""
    return dialect.client(op, request_id).answer(result, loss)


def _sendable(backend: Dialect, op: ops.Operation, request: ProtoMessage) -> ProtoMessage | None:
    """The rich answer as a backend of ``backend``'s dialect sends it to the call the
    gateway encoded (JSON-RPC: for that call's id), read back as the gateway reads it."""
    codec = backend.backend(op, request, LossReport())
    raw = _encode(backend, op, _answer_for(op.name), LossReport(), codec.requests[0].rpc_id)
    return codec.read(200, raw)


def answer_losses(op_name: str, request: ProtoMessage, backend: Dialect,
                  client: Dialect) -> list[str]:
    """The answer fields a client of ``client``'s dialect would lose, behind ``backend``."""
    if op_name not in ANSWERED_OPS:
        return []
    op = ops.BY_NAME[op_name]
    try:
        sendable = _sendable(backend, op, request)
        loss = LossReport(answering=True)
        _encode(client, op, sendable, loss)
    except A2AError:
        return []  # the sample does not fit this pair: nothing to say about it
    return loss.answer_losses()
