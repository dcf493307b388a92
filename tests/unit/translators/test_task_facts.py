"""What the task index reads of answers: the same facts from a canonical answer and from
the bytes each of the six dialects makes of it (a passed-through answer)."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from translators import operations as ops
from translators.dialects import dialect_for
from translators.dialects.base import WireRequest
from translators.dialects.contract import BackendCodec
from translators.loss import LossReport
from translators.task_facts import (
    TaskFacts,
    document_facts,
    facts_of,
    state_name,
    wire_facts,
)

T0 = 1_700_000_000.25


def task(task_id: str, state: int, *, stamp: float | None = T0, ctx: str = "c1") -> pb.Task:
    t = pb.Task(id=task_id, context_id=ctx)
    t.status.state = state  # type: ignore[assignment]
    if stamp is not None:
        t.status.timestamp.seconds = int(stamp)
        t.status.timestamp.nanos = round(stamp % 1 * 1e9)
    t.artifacts.add(artifact_id="a", parts=[pb.Part(text="x")])
    return t


ANSWERS: list[tuple[str, Any, list[TaskFacts]]] = [
    (ops.SEND, pb.SendMessageResponse(task=task("t1", pb.TASK_STATE_COMPLETED)),
     [("t1", "c1", "TASK_STATE_COMPLETED", T0)]),
    (ops.SEND, pb.SendMessageResponse(message=pb.Message(message_id="m", role=pb.ROLE_AGENT,
                                                         parts=[pb.Part(text="hi")])), []),
    (ops.GET_TASK, task("t2", pb.TASK_STATE_WORKING, stamp=None),
     [("t2", "c1", "TASK_STATE_WORKING", None)]),
    (ops.CANCEL, task("t3", pb.TASK_STATE_CANCELED),
     [("t3", "c1", "TASK_STATE_CANCELED", T0)]),
]
LIST = (ops.LIST_TASKS, pb.ListTasksResponse(tasks=[
    task("t4", pb.TASK_STATE_INPUT_REQUIRED, ctx="c2"), task("t5", pb.TASK_STATE_FAILED)]),
    [("t4", "c2", "TASK_STATE_INPUT_REQUIRED", T0),
     ("t5", "c1", "TASK_STATE_FAILED", T0)])


def _bytes(binding: str, version: str, op: str, answer: Any) -> bytes:
    # Every row answers through the same contract (translators/dialects/contract.py).
    return dialect_for(binding, version).client(ops.BY_NAME[op], 7).answer(answer, LossReport())


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_wire_answers_say_what_canonical_ones_do(binding: str, version: str) -> None:
    cases = ANSWERS + ([LIST] if version == "1.0" else [])
    for op, answer, expected in cases:
        assert list(facts_of(answer)) == expected
        assert wire_facts(binding, version, op, _bytes(binding, version, op, answer)) \
            == expected, (op, binding, version)


def _passed(binding: str, version: str, op: str = ops.SEND) -> BackendCodec:
    """The backend side of a call passed through as the client sent it (JSON-RPC id 7)."""
    operation = ops.BY_NAME[op]
    return dialect_for(binding, version).backend(operation, operation.request(), LossReport(),
                                                 wire=WireRequest(b"{}", rpc_id=7))


def _forwarded(binding: str, version: str, op: str, raw: bytes) -> Any:
    """What the backend client keeps of a passed-through answer (WireAnswer.document)."""
    answer = _passed(binding, version, op).forwarded(200, "application/json", raw)
    return None if answer is None else answer.document


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_the_document_a_dialect_read_says_what_its_bytes_do(binding: str,
                                                            version: str) -> None:
    # A same-dialect answer is read once, by the dialect that checks it; the index reads
    # its tasks from that reading, not from the bytes again.
    cases = ANSWERS + ([LIST] if version == "1.0" else [])
    for op, answer, expected in cases:
        raw = _bytes(binding, version, op, answer)
        document = _forwarded(binding, version, op, raw)
        assert document is not None, (op, binding, version)
        assert document_facts(binding, version, op, document) == expected, (op, binding)
    assert wire_facts(binding, version, ops.LIST_TASKS, b"{}") == []


def test_what_a_dialect_does_not_forward() -> None:
    for raw in (b'{"jsonrpc":"2.0","id":7,"result":{}} x', b"\xef\xbb\xbf{}", b"\xff",
                b'{"jsonrpc":"2.0","id":8,"result":{}}', b'{"jsonrpc":"2.0","id":7}',
                b'{"jsonrpc":"2.0","id":true,"result":{}}', b"[]"):
        assert _forwarded("JSONRPC", "1.0", ops.SEND, raw) is None, raw
    good = b' {"jsonrpc":"2.0","id":7,"result":{}}\n'
    assert _forwarded("JSONRPC", "1.0", ops.SEND, good) == {
        "jsonrpc": "2.0", "id": 7, "result": {}}
    assert _passed("JSONRPC", "1.0").forwarded(500, "application/json", good) is None
    rest = _passed("HTTP+JSON", "1.0")
    assert rest.forwarded(500, "application/json", b"{}") is None
    assert rest.forwarded(200, "text/html", b"{}") is None
    answer = rest.forwarded(201, "application/json", b"{}")
    assert answer is not None and (answer.status, answer.document) == (201, {})
    assert _passed("GRPC", "1.0").forwarded(200, "", b"\xff") is None


def test_events_and_what_says_nothing() -> None:
    update = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=pb.TaskStatus(state=pb.TASK_STATE_WORKING)))
    assert list(facts_of(update)) == [("t", "c", "TASK_STATE_WORKING", None)]
    first = pb.StreamResponse(task=task("t", pb.TASK_STATE_SUBMITTED))
    assert list(facts_of(first)) == [("t", "c1", "TASK_STATE_SUBMITTED", T0)]
    artifact = pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(task_id="t"))
    assert list(facts_of(artifact)) == []
    assert list(facts_of(pb.Task(id="t"))) == []  # no state: nothing to record
    assert list(facts_of(None)) == []
    for body in (b"", b"{", b"[]", b'{"jsonrpc":"2.0","id":1,"error":{}}', b"\xff"):
        for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
            assert wire_facts(binding, "1.0", ops.GET_TASK, body) == []
    assert wire_facts("JSONRPC", "1.0", ops.PUSH_GET, b'{"result":{"id":"x"}}') == []


def test_state_spellings() -> None:
    assert state_name("canceled") == state_name("TASK_STATE_CANCELLED") == "TASK_STATE_CANCELED"
    assert state_name("input-required") == "TASK_STATE_INPUT_REQUIRED"
    assert state_name("TASK_STATE_UNSPECIFIED") is None and state_name("unknown") is None
    assert state_name(3) is None


def test_json_timestamps() -> None:
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c",'
            b'"status":{"state":"working","timestamp":"2023-11-14T22:13:20.250000"}}}')
    assert wire_facts("JSONRPC", "0.3", ops.GET_TASK, body) == [
        ("t", "c", "TASK_STATE_WORKING", T0)]
