"""The ids a passed-through SendMessage answer shows, in every dialect (what migration
mode binds a new conversation's owner by, without decoding the answer)."""

from __future__ import annotations

import json

from a2a.types import a2a_pb2 as pb

from translators.task_facts import answer_ids

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
