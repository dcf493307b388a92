"""The ids a passed-through SendMessage answer shows, in every dialect (what migration
mode binds a new conversation's owner by, without decoding the answer)."""

from __future__ import annotations

import json

from a2a.types import a2a_pb2 as pb

from translators.task_facts import answer_ids, canonical_ids

TASK03 = {"kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "completed"}}
MESSAGE03 = {"kind": "message", "messageId": "m", "role": "agent", "contextId": "c-2",
             "parts": []}


def test_jsonrpc_answers_of_both_versions() -> None:
    v03 = {"jsonrpc": "2.0", "id": 1, "result": TASK03}
    assert answer_ids("JSONRPC", "0.3", "SendMessage", json.dumps(v03).encode(),
                      None) == ("t-1", "c-1")
    v10 = {"jsonrpc": "2.0", "id": 1, "result": {"task": {
        "id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}}}
    assert answer_ids("JSONRPC", "1.0", "SendMessage", b"", v10) == ("t-1", "c-1")
    message = {"jsonrpc": "2.0", "id": 1, "result": MESSAGE03}
    assert answer_ids("JSONRPC", "0.3", "SendMessage", b"", message) == ("", "c-2")
    message10 = {"jsonrpc": "2.0", "id": 1, "result": {"message": {
        **MESSAGE03, "taskId": "t-9"}}}
    assert answer_ids("JSONRPC", "1.0", "SendMessage", b"", message10) == ("t-9", "c-2")


def test_rest_and_grpc_answers() -> None:
    assert answer_ids("HTTP+JSON", "1.0", "SendMessage", json.dumps(
        {"task": TASK03}).encode(), None) == ("t-1", "c-1")
    answer = pb.SendMessageResponse(message=pb.Message(message_id="m", context_id="c-3"))
    assert answer_ids("GRPC", "1.0", "SendMessage", answer.SerializeToString(),
                      None) == ("", "c-3")


def test_what_does_not_parse_shows_nothing() -> None:
    for body in (b"", b"{", b"\xff", b"[1, 2]", b'{"result": "x"}'):
        assert answer_ids("JSONRPC", "0.3", "SendMessage", body, None) == ("", "")
    assert answer_ids("GRPC", "1.0", "SendMessage", b"\x0a\xff", None) == ("", "")
    assert answer_ids("JSONRPC", "0.3", "GetTask", b"{}", None) == ("", "")


def _v10_answers() -> list[pb.SendMessageResponse]:
    return [
        pb.SendMessageResponse(task=pb.Task(id="t-1", context_id="c-1")),
        pb.SendMessageResponse(message=pb.Message(message_id="m", task_id="t-9",
                                                  context_id="c-2")),
        pb.SendMessageResponse(message=pb.Message(message_id="m", context_id="c-3")),
        pb.SendMessageResponse(),
    ]


def test_a_decoded_answer_shows_what_its_bytes_show() -> None:
    # Migration mode reads an answer's ids passed through (answer_ids) or decoded
    # (canonical_ids): one rule, whichever way the answer went.
    for answer in _v10_answers():
        for tasks_only in (False, True):
            wire = answer_ids("GRPC", "1.0", "SendMessage", answer.SerializeToString(), None,
                              tasks_only)
            assert canonical_ids(answer, tasks_only) == wire, (answer, tasks_only)
    said = canonical_ids(_v10_answers()[1])
    assert said == ("t-9", "c-2") and canonical_ids(_v10_answers()[1], True) == ("", "c-2")


def test_of_stream_events_only_the_task_and_its_status_are_tasks_the_index_records() -> None:
    task = pb.StreamResponse(task=pb.Task(id="t-1", context_id="c-1"))
    status = pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(task_id="t-2",
                                                                      context_id="c-2"))
    chunk = pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(task_id="t-3",
                                                                         context_id="c-3"))
    message = pb.StreamResponse(message=pb.Message(message_id="m", task_id="t-4",
                                                   context_id="c-4"))
    assert [canonical_ids(e) for e in (task, status, chunk, message)] == [
        ("t-1", "c-1"), ("t-2", "c-2"), ("t-3", "c-3"), ("t-4", "c-4")]
    assert [canonical_ids(e, True) for e in (task, status, chunk, message)] == [
        ("t-1", "c-1"), ("t-2", "c-2"), ("", "c-3"), ("", "c-4")]
    assert canonical_ids(None) == ("", "") and canonical_ids(pb.AgentCard()) == ("", "")
