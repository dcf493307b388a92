"""Golden pairs from the wire reference (/work/shared/a2a-wire-reference.md), J03 ⇄ P10.

Every JSON example in the reference that pairs v0.3 JSON-RPC JSON (J03) with v1.0
ProtoJSON (P10) is copied here verbatim (comments stripped) and pushed through the
public translators in both directions. Where a direction goes through the protobuf
model, the P10 side is compared after a parse/dump, so ProtoJSON's own normal form
(default omission, shortest timestamp fraction, Struct numbers as doubles) applies.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from tests.support.golden_support import (
    CANCEL,
    GET_TASK,
    JSON,
    PUSH_LIST,
    SEND,
    STREAM,
    SUBSCRIBE,
    through_proto,
    timestamps_as_instants,
)
from translators import operations as ops
from translators.dialects import jsonrpc as rpc
from translators.errors import A2AError
from translators.j03 import objects as o
from translators.loss import CARRY_KEY, LossPolicy, LossReport
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03, V10
from translators.vocabulary import ends_v03_stream

RPC = {V03: rpc.JSONRPC_V03, V10: rpc.JSONRPC_V10}

# ====================================================================== §3.2 Part

PARTS_J03: list[JSON] = [
    {"kind": "text", "text": "hi"},
    {"kind": "file", "file": {"name": "a.png", "mimeType": "image/png", "bytes": "iVBORw0KGgo="}},
    {"kind": "file", "file": {"uri": "https://x/doc.pdf", "mimeType": "application/pdf"}},
    {"kind": "data", "data": {"k": 1}},
]
PARTS_P10: list[JSON] = [
    {"text": "hi"},
    {"raw": "iVBORw0KGgo=", "filename": "a.png", "mediaType": "image/png"},
    {"url": "https://x/doc.pdf", "mediaType": "application/pdf"},
    {"data": {"k": 1}},
]


def test_parts_j03_to_p10() -> None:
    loss = LossReport()
    assert o.parts_to_p10(PARTS_J03, "parts", loss) == PARTS_P10
    assert not loss
    # The result is valid v1.0 and survives the proto unchanged (1 == 1.0 for Struct).
    msg = {"messageId": "m", "role": "ROLE_USER", "parts": PARTS_P10}
    assert through_proto(msg, pb.Message)["parts"] == PARTS_P10


def test_parts_p10_to_j03() -> None:
    loss = LossReport()
    assert o.parts_to_j03(PARTS_P10, "parts", loss) == PARTS_J03
    assert not loss


def test_non_object_data_uses_py_compat_convention() -> None:
    # §3.2 "Lossy cases": {"value": X} plus metadata.data_part_compat = true, both ways.
    for value in ([1, 2], "s", 3, True, None):
        loss = LossReport()
        j03 = o.part_to_j03({"data": value, "metadata": {"m": "x"}}, "p", loss)
        assert j03 == {"kind": "data", "data": {"value": value},
                       "metadata": {"m": "x", o.DATA_COMPAT_FLAG: True}}
        assert o.part_to_p10(j03, "p", loss) == {"data": value, "metadata": {"m": "x"}}
        assert not loss
    # And a compat part a py v0.3 peer sent arrives as a bare value.
    j03 = {"kind": "data", "data": {"value": [1]}, "metadata": {o.DATA_COMPAT_FLAG: True}}
    assert o.part_to_p10(j03, "p", LossReport()) == {"data": [1]}


def test_media_type_and_filename_on_text_and_data_parts() -> None:
    # §3.2: v0.3 has mimeType/name on files only; the type a kind implies is no loss.
    loss = LossReport()
    parts: list[JSON] = [{"text": "t", "mediaType": "text/plain"},
                         {"data": {}, "mediaType": "application/json"},
                         {"text": "t", "mediaType": "text/markdown", "filename": "a.md"},
                         {"data": {"a": 1}, "filename": "d.json"}]
    j03 = o.parts_to_j03(parts, "params.message.parts", loss)
    assert j03 == [{"kind": "text", "text": "t"}, {"kind": "data", "data": {}},
                   {"kind": "text", "text": "t"}, {"kind": "data", "data": {"a": 1}}]
    assert loss.request == ["params.message.parts[2].mediaType",
                            "params.message.parts[2].filename",
                            "params.message.parts[3].filename"]
    # CARRY keeps them under the private metadata key and restores them.
    carry = LossReport(policy=LossPolicy.CARRY)
    j03 = o.parts_to_j03(parts, "params.message.parts", carry)
    assert not carry
    assert j03[2]["metadata"] == {CARRY_KEY: {"mediaType": "text/markdown", "filename": "a.md"}}
    back = o.parts_to_p10(j03, "params.message.parts", carry)
    assert back == [{"text": "t"}, {"data": {}}, parts[2], parts[3]]


def test_file_bytes_accept_url_safe_and_unpadded_emit_standard() -> None:
    # §3.0: accept standard and URL-safe base64, padded or not; emit standard.
    msg = {"kind": "message", "messageId": "m", "role": "user",
           "parts": [{"kind": "file", "file": {"bytes": "-_8"}}]}
    resp = RPC[V03].decode_result(SEND, msg, LossReport(), SEND.request())
    assert isinstance(resp, pb.SendMessageResponse)
    assert resp.message.parts[0].raw == b"\xfb\xff"
    out = RPC[V03].encode_result(SEND, resp, LossReport())
    assert out["parts"][0]["file"]["bytes"] == "+/8="


def test_v10_params_lose_stray_v03_fields() -> None:
    # §3.0: py@HEAD parses v1.0 strictly, so nothing v0.3-only may reach a v1.0 backend.
    params = copy.deepcopy(SEND_P10["params"])
    params["message"]["kind"] = "message"
    params["message"]["parts"][0]["kind"] = "text"
    params["configuration"]["blocking"] = True
    req = RPC[V10].decode_params(SEND, params, LossReport())
    assert RPC[V10].encode_params(SEND, req, LossReport()) == SEND_P10["params"]


def test_file_part_with_both_bytes_and_uri_keeps_bytes() -> None:
    loss = LossReport()
    part = {"kind": "file", "file": {"bytes": "AA==", "uri": "https://x/y"}}
    assert o.part_to_p10(part, "p", loss) == {"raw": "AA=="}
    assert loss.request == ["p.file.uri"]


# ====================================================================== §3.3 Message

MESSAGE_J03: JSON = {"kind": "message", "messageId": "m1", "role": "user", "contextId": "c1",
               "parts": [{"kind": "text", "text": "hi"}], "referenceTaskIds": ["t0"]}
MESSAGE_P10: JSON = {"messageId": "m1", "role": "ROLE_USER", "contextId": "c1",
               "parts": [{"text": "hi"}], "referenceTaskIds": ["t0"]}


def test_message_pair() -> None:
    loss = LossReport()
    assert o.message_to_p10(MESSAGE_J03, "m", loss) == MESSAGE_P10
    assert through_proto(MESSAGE_P10, pb.Message) == MESSAGE_P10
    assert o.message_to_j03(MESSAGE_P10, "m", loss) == MESSAGE_J03
    assert not loss


# ====================================================================== §3.4 Task

TASK_J03: JSON = {"kind": "task", "id": "t1", "contextId": "c1", "status": {
    "state": "input-required", "timestamp": "2025-10-28T10:30:00+00:00",
    "message": {"kind": "message", "role": "agent", "messageId": "m2",
                "parts": [{"kind": "text", "text": "From where?"}]}}}
TASK_P10: JSON = {"id": "t1", "contextId": "c1", "status": {
    "state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-10-28T10:30:00.000Z",
    "message": {"role": "ROLE_AGENT", "messageId": "m2", "parts": [{"text": "From where?"}]}}}


def test_task_j03_to_p10() -> None:
    loss = LossReport()
    # The object translator emits the millisecond form v1.0 asks for (§3.4, spec §5.6.1).
    assert o.task_to_p10(TASK_J03, "result", loss) == TASK_P10
    # Through the public function and the proto, ProtoJSON prints its own fraction.
    task = RPC[V03].decode_result(GET_TASK, copy.deepcopy(TASK_J03), loss, GET_TASK.request())
    assert isinstance(task, pb.Task)
    assert timestamps_as_instants(dump_p10(task)) == timestamps_as_instants(TASK_P10)
    assert not loss


def test_task_p10_to_j03() -> None:
    loss = LossReport()
    j03 = RPC[V03].encode_result(GET_TASK, parse_p10(TASK_P10, pb.Task), loss)
    assert timestamps_as_instants(j03) == timestamps_as_instants(TASK_J03)
    assert j03["status"]["timestamp"].endswith("Z")  # §3.4: ISO 8601 with Z to v0.3
    assert not loss


@pytest.mark.parametrize(("j03", "p10"), [
    ("2025-04-02T16:59:25.331844", "2025-04-02T16:59:25.331Z"),  # naive = UTC (§3.4)
    ("2025-10-28T10:30:00+00:00", "2025-10-28T10:30:00.000Z"),
    ("2025-10-28T12:30:00.5+02:00", "2025-10-28T10:30:00.500Z"),  # offsets → UTC
    ("2025-10-28T10:30:00Z", "2025-10-28T10:30:00.000Z"),
])
def test_status_timestamps_to_p10(j03: str, p10: str) -> None:
    status = o.status_to_p10({"state": "working", "timestamp": j03}, "s", LossReport())
    assert status == {"state": "TASK_STATE_WORKING", "timestamp": p10}


def test_unknown_state_is_unspecified() -> None:
    # §3.1: "unknown" ⇄ TASK_STATE_UNSPECIFIED (omitted by ProtoJSON).
    assert o.status_to_p10({"state": "unknown"}, "s", LossReport()) == {
        "state": "TASK_STATE_UNSPECIFIED"}
    assert o.status_to_j03({}, "s", LossReport()) == {"state": "unknown"}


# ====================================================================== §3.7 SendMessage

SEND_J03: JSON = {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {
    "message": {"kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]},
    "configuration": {"blocking": False, "historyLength": 2, "acceptedOutputModes": ["text/plain"],
                      "pushNotificationConfig": {
                          "url": "https://cb/x", "token": "tok",
                          "authentication": {"schemes": ["Bearer"], "credentials": "s3cr3t"}}}}}
SEND_P10: JSON = {"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {
    "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
    "configuration": {"returnImmediately": True, "historyLength": 2,
                      "acceptedOutputModes": ["text/plain"],
                      "taskPushNotificationConfig": {
                          "url": "https://cb/x", "token": "tok",
                          "authentication": {"scheme": "Bearer", "credentials": "s3cr3t"}}}}}


def test_method_names_pick_the_version() -> None:
    assert rpc.operation_for_method(SEND_J03["method"]) == (SEND, RPC[V03])
    assert rpc.operation_for_method(SEND_P10["method"]) == (SEND, RPC[V10])
    assert rpc.operation_for_method("message/stream") == (STREAM, RPC[V03])
    assert rpc.operation_for_method("tasks/pushNotificationConfig/list") == (PUSH_LIST, RPC[V03])
    assert rpc.operation_for_method("ListTaskPushNotificationConfigs") == (PUSH_LIST, RPC[V10])
    assert rpc.operation_for_method("tasks/list") is None
    assert RPC[V03].method(SEND) == "message/send"
    assert RPC[V10].method(SEND) == "SendMessage"
    with pytest.raises(A2AError) as exc:
        RPC[V03].method(ops.BY_NAME[ops.LIST_TASKS])
    assert exc.value.name == "UnsupportedOperationError"


@pytest.mark.parametrize("op", [SEND, STREAM])
def test_send_params_j03_to_p10(op: ops.Operation) -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(op, copy.deepcopy(SEND_J03["params"]), loss)
    assert isinstance(req, pb.SendMessageRequest)
    assert dump_p10(req) == SEND_P10["params"]
    assert not loss


@pytest.mark.parametrize("op", [SEND, STREAM])
def test_send_params_p10_to_j03(op: ops.Operation) -> None:
    loss = LossReport()
    req = RPC[V10].decode_params(op, copy.deepcopy(SEND_P10["params"]), loss)
    assert dump_p10(req) == SEND_P10["params"]
    assert RPC[V03].encode_params(op, req, loss) == SEND_J03["params"]
    assert RPC[V10].encode_params(op, req, loss) == SEND_P10["params"]
    assert not loss


def _send_config_to_p10(conf: dict[str, Any]) -> dict[str, Any]:
    params = {"message": SEND_J03["params"]["message"], "configuration": conf}
    req = RPC[V03].decode_params(SEND, params, LossReport())
    conf_p10: JSON = dump_p10(req).get("configuration", {})
    return conf_p10


def _send_config_to_j03(conf: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"message": SEND_P10["params"]["message"]}
    if conf is not None:
        params["configuration"] = conf
    req = RPC[V10].decode_params(SEND, params, LossReport())
    out = RPC[V03].encode_params(SEND, req, LossReport())
    conf_j03: dict[str, Any] = out["configuration"]
    return conf_j03


# §3.7 "Blocking semantics", the two rows between J03 and P10, every input value.
@pytest.mark.parametrize(("j03", "p10"), [
    ({}, {}),  # absent → omitted (v1.0 default is blocking)
    ({"blocking": True}, {}),  # true → omitted
    ({"blocking": False}, {"returnImmediately": True}),  # false → returnImmediately
])
def test_blocking_j03_to_p10(j03: dict[str, Any], p10: dict[str, Any]) -> None:
    assert _send_config_to_p10(j03) == p10


@pytest.mark.parametrize(("p10", "blocking"), [
    (None, True),  # no configuration at all: v1.0 default, blocking
    ({}, True),
    ({"returnImmediately": False}, True),
    ({"returnImmediately": True}, False),
])
def test_blocking_p10_to_j03(p10: dict[str, Any] | None, blocking: bool) -> None:
    assert _send_config_to_j03(p10)["blocking"] is blocking


# §3.7 "historyLength semantics": v0.3 0 = all; v1.0 0 = none.
@pytest.mark.parametrize(("j03", "p10"), [
    ({}, {}),
    ({"historyLength": 0}, {}),  # 0 → unset (unlike py@HEAD)
    ({"historyLength": 3}, {"historyLength": 3}),
])
def test_history_length_j03_to_p10(j03: dict[str, Any], p10: dict[str, Any]) -> None:
    assert _send_config_to_p10(j03) == p10
    req = RPC[V03].decode_params(GET_TASK, {"id": "t1", **j03}, LossReport())
    assert dump_p10(req) == {"id": "t1", **p10}


@pytest.mark.parametrize(("p10", "j03"), [
    ({}, {}),
    ({"historyLength": 0}, {}),  # 0 → omitted; the gateway strips history instead
    ({"historyLength": 3}, {"historyLength": 3}),
])
def test_history_length_p10_to_j03(p10: dict[str, Any], j03: dict[str, Any]) -> None:
    conf = _send_config_to_j03(p10)
    assert {k: v for k, v in conf.items() if k == "historyLength"} == j03
    req = RPC[V10].decode_params(GET_TASK, {"id": "t1", **p10}, LossReport())
    assert RPC[V03].encode_params(GET_TASK, req, LossReport()) == {"id": "t1", **j03}


_HISTORY = [{"kind": "message", "messageId": "h1", "role": "user",
             "parts": [{"kind": "text", "text": "q"}]}]


@pytest.mark.parametrize(("history_length", "kept"), [(None, True), (0, False), (1, True)])
def test_history_length_zero_strips_v03_history(history_length: int | None, kept: bool) -> None:
    task_j03 = {**TASK_J03, "history": _HISTORY}
    conf: dict[str, Any] = {} if history_length is None else {"historyLength": history_length}
    # GetTask: the request carries historyLength itself.
    get_req = parse_p10({"id": "t1", **conf}, pb.GetTaskRequest)
    task = RPC[V03].decode_result(GET_TASK, copy.deepcopy(task_j03), LossReport(), get_req)
    assert isinstance(task, pb.Task)
    assert (len(task.history) == 1) is kept
    # SendMessage: it sits in the configuration.
    send_req = parse_p10({"message": SEND_P10["params"]["message"], "configuration": conf},
                         pb.SendMessageRequest)
    resp = RPC[V03].decode_result(SEND, copy.deepcopy(task_j03), LossReport(), send_req)
    assert isinstance(resp, pb.SendMessageResponse)
    assert (len(resp.task.history) == 1) is kept


# ====================================================================== §3.8 results

SEND_RESULT_J03: JSON = {"jsonrpc": "2.0", "id": 7, "result": {
    "kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "completed"},
    "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "ok"}]}]}}
SEND_RESULT_P10: JSON = {"jsonrpc": "2.0", "id": 7, "result": {"task": {
    "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
    "artifacts": [{"artifactId": "a1", "parts": [{"text": "ok"}]}]}}}


def test_send_result_j03_to_p10() -> None:
    loss = LossReport()
    resp = RPC[V03].decode_result(SEND, copy.deepcopy(SEND_RESULT_J03["result"]), loss, SEND.request())
    assert isinstance(resp, pb.SendMessageResponse)
    assert rpc.success(7, RPC[V10].encode_result(SEND, resp, loss)) == SEND_RESULT_P10
    assert not loss


def test_send_result_p10_to_j03() -> None:
    loss = LossReport()
    resp = RPC[V10].decode_result(SEND, copy.deepcopy(SEND_RESULT_P10["result"]), loss, SEND.request())
    assert isinstance(resp, pb.SendMessageResponse)
    assert rpc.success(7, RPC[V03].encode_result(SEND, resp, loss)) == SEND_RESULT_J03
    assert not loss


def test_send_result_message_both_ways() -> None:
    loss = LossReport()
    resp = RPC[V03].decode_result(SEND, copy.deepcopy(MESSAGE_J03), loss, SEND.request())
    assert dump_p10(resp) == {"message": MESSAGE_P10}
    assert RPC[V03].encode_result(SEND, resp, loss) == MESSAGE_J03
    assert not loss


STREAM_J03 = """
data: {"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}}
data: {"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"…"}]},"append":false,"lastChunk":true}}
data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true}}
"""
STREAM_P10 = """
data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}}
data: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"…"}]},"lastChunk":true}}}
data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}
"""
STREAM_P10_REST = """
data: {"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}
data: {"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}
"""


def sse_data(text: str) -> list[Any]:
    return [json.loads(line.removeprefix("data: ")) for line in text.strip().splitlines()]


def without_false_append(line: dict[str, Any]) -> dict[str, Any]:
    """J03 `append` is optional and defaults to false; ProtoJSON omits false."""
    line = copy.deepcopy(line)
    if line["result"].get("append") is False:
        del line["result"]["append"]
    return line


def test_stream_j03_to_p10() -> None:
    loss = LossReport()
    got = [rpc.success(line["id"], dump_p10(RPC[V03].decode_event(line["result"], loss, pb.SendMessageRequest())))
           for line in sse_data(STREAM_J03)]
    assert got == sse_data(STREAM_P10)
    assert not loss  # `final` is not a loss: the end of the stream says it (§3.6)
    # The v1.0 REST frames are the bare StreamResponses.
    rest = sse_data(STREAM_P10_REST)
    assert [got[0]["result"], got[2]["result"]] == rest


def test_stream_p10_to_j03_with_final_on_last_status_update() -> None:
    loss = LossReport()
    lines = sse_data(STREAM_P10)
    items = [parse_p10(line["result"], pb.StreamResponse) for line in lines]
    got = []
    for i, item in enumerate(items):
        last = i == len(items) - 1
        got.append(rpc.success(1, RPC[V03].encode_event(item, last, loss)))
    assert got == [without_false_append(line) for line in sse_data(STREAM_J03)]
    assert not loss
    # The end-of-stream rule also recognizes the terminal state by itself (§3.6).
    assert [ends_v03_stream(item) for item in items] == [False, False, True]
    # Through the unary rules (no lookahead), `final` defaults to false.
    assert RPC[V03].encode_result(STREAM, items[2], loss)["final"] is False


def test_subscribe_params_both_ways() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(SUBSCRIBE, {"id": "t1", "metadata": {"a": 1}}, loss)
    assert dump_p10(req) == {"id": "t1"}
    assert loss.request == ["params.metadata"]  # §3.10: v1.0 SubscribeToTask has no metadata
    assert RPC[V03].encode_params(SUBSCRIBE, req, LossReport()) == {"id": "t1"}


def test_cancel_params_keep_metadata() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(CANCEL, {"id": "t1", "metadata": {"a": 1}}, loss)
    assert dump_p10(req) == {"id": "t1", "metadata": {"a": 1}}
    assert RPC[V03].encode_params(CANCEL, req, loss) == {"id": "t1", "metadata": {"a": 1}}
    assert not loss


def test_get_task_params_drop_metadata() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(GET_TASK, {"id": "t1", "metadata": {"a": 1}}, loss)
    assert dump_p10(req) == {"id": "t1"}
    assert loss.request == ["params.metadata"]
