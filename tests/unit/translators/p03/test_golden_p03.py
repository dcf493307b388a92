"""Golden pairs from the wire reference (/work/shared/a2a-wire-reference.md), P03 ⇄ P10.

P03 is the ProtoJSON of the v0.3 proto (v0.3 REST bodies), P10 that of the v1.0 proto.
Every pair goes JSON → v0.3 message → translator → v1.0 message → JSON and back, through
the public functions the REST and gRPC codecs call. Examples whose v0.3 side the
reference gives only as J03 (Artifact, the card) are restated in P03 here. Both sides are
compared in ProtoJSON's own normal form (defaults omitted, Struct numbers as doubles).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from tests.support.golden_support import (
    norm03,
)
from translators import answers
from translators import operations as ops
from translators.errors import A2AError
from translators.loss import CARRY_KEY, LossPolicy, LossReport
from translators.p03 import objects, requests
from translators.p03.json import (
    dump_create_push_body,
    dump_p03,
    parse_create_push_body,
    parse_p03,
)
from translators.protojson import dump_p10, parse_p10
from translators.vocabulary import ends_v03_stream

JSON = dict[str, Any]


# ====================================================================== §3.2 Part

PARTS_P03: list[JSON] = [
    {"text": "hi"},
    {"file": {"name": "a.png", "mimeType": "image/png", "fileWithBytes": "aVZCT1J3MEtHZ289"}},
    {"file": {"fileWithUri": "https://x/doc.pdf", "mimeType": "application/pdf"}},
    {"data": {"data": {"k": 1}}},
]
PARTS_P10: list[JSON] = [
    {"text": "hi"},
    {"raw": "iVBORw0KGgo=", "filename": "a.png", "mediaType": "image/png"},
    {"url": "https://x/doc.pdf", "mediaType": "application/pdf"},
    {"data": {"k": 1}},
]


def test_parts_p03_to_p10() -> None:
    loss = LossReport()
    out = [dump_p10(objects.part_to_p10(parse_p03(p, v03.Part), f"p[{i}]", loss))
           for i, p in enumerate(PARTS_P03)]
    assert out == PARTS_P10
    assert not loss


def test_parts_p10_to_p03() -> None:
    loss = LossReport()
    out = [dump_p03(objects.part_to_p03(parse_p10(p, pb.Part), f"p[{i}]", loss))
           for i, p in enumerate(PARTS_P10)]
    assert out == PARTS_P03
    assert not loss


def test_file_bytes_are_double_base64_on_the_v03_wire() -> None:
    # §3.2: the proto `bytes` hold the base64 *text*; the P03 JSON is base64 of that.
    part = objects.part_to_p03(parse_p10(PARTS_P10[1], pb.Part), "p", LossReport())
    assert part.file.file_with_bytes == b"iVBORw0KGgo="
    assert base64.b64decode(PARTS_P03[1]["file"]["fileWithBytes"]) == b"iVBORw0KGgo="
    # A spec-pure peer (bytes mode "raw") puts the content itself.
    raw = objects.part_to_p03(parse_p10(PARTS_P10[1], pb.Part), "p", LossReport(),
                              bytes_mode="raw")
    assert raw.file.file_with_bytes == base64.b64decode("iVBORw0KGgo=")


def test_non_object_data_uses_py_compat_convention() -> None:
    # §3.2 "Lossy cases": {"value": X} plus metadata.data_part_compat = true, both ways.
    for value in ([1, 2], "s", 3, True, None):
        loss = LossReport()
        part = parse_p10({"data": value, "metadata": {"m": "x"}}, pb.Part)
        p03 = objects.part_to_p03(part, "p", loss)
        assert dump_p03(p03) == {"data": {"data": {"value": value}},
                                 "metadata": {"m": "x", "data_part_compat": True}}
        assert dump_p10(objects.part_to_p10(p03, "p", loss)) == {"data": value,
                                                                 "metadata": {"m": "x"}}
        assert not loss
    # A py v0.3 peer's compat part arrives as a bare value, with no metadata left over.
    sent = parse_p03({"data": {"data": {"value": [1]}}, "metadata": {"data_part_compat": True}},
                     v03.Part)
    assert dump_p10(objects.part_to_p10(sent, "p", LossReport())) == {"data": [1]}


def test_media_type_and_filename_on_text_and_data_parts() -> None:
    # Same rule as J03: v0.3 has mimeType/name on files only; the implied type is no loss.
    parts = [parse_p10(p, pb.Part) for p in (
        {"text": "t", "mediaType": "text/plain"},
        {"data": {}, "mediaType": "application/json"},
        {"text": "t", "mediaType": "text/markdown", "filename": "a.md"},
        {"data": {"a": 1}, "filename": "d.json"})]
    loss = LossReport()
    out = objects.parts_to_p03(parts, "message.parts", loss, "double")
    assert [dump_p03(p) for p in out] == [{"text": "t"}, {"data": {"data": {}}}, {"text": "t"},
                                          {"data": {"data": {"a": 1}}}]
    assert loss.request == ["message.parts[2].mediaType", "message.parts[2].filename",
                            "message.parts[3].filename"]
    carry = LossReport(policy=LossPolicy.CARRY)
    out = objects.parts_to_p03(parts, "message.parts", carry, "double")
    assert not carry
    assert dump_p03(out[2])["metadata"] == {
        CARRY_KEY: {"mediaType": "text/markdown", "filename": "a.md"}}
    back = objects.parts_to_p10(out, "message.parts", carry, "auto")
    assert back[2:] == parts[2:]
    assert not back[2].HasField("metadata")


# ====================================================================== §3.3 Message

MESSAGE_P03: JSON = {"messageId": "m1", "role": "ROLE_USER", "contextId": "c1",
                     "content": [{"text": "hi"}]}
MESSAGE_P10: JSON = {"messageId": "m1", "role": "ROLE_USER", "contextId": "c1",
                     "parts": [{"text": "hi"}], "referenceTaskIds": ["t0"]}


def test_message_pair() -> None:
    loss = LossReport()
    p03 = objects.message_to_p03(parse_p10(MESSAGE_P10, pb.Message), "message", loss)
    assert dump_p03(p03) == MESSAGE_P03
    # referenceTaskIds has no v0.3 proto field (§3.3, §8.5).
    assert loss.request == ["message.referenceTaskIds"]
    back = objects.message_to_p10(parse_p03(MESSAGE_P03, v03.Message), "message", LossReport())
    assert dump_p10(back) == {k: v for k, v in MESSAGE_P10.items() if k != "referenceTaskIds"}


def test_message_reference_task_ids_carried_in_metadata() -> None:
    carry = LossReport(policy=LossPolicy.CARRY)
    p03 = objects.message_to_p03(parse_p10(MESSAGE_P10, pb.Message), "message", carry)
    assert not carry
    assert dump_p03(p03)["metadata"] == {CARRY_KEY: {"referenceTaskIds": ["t0"]}}
    assert dump_p10(objects.message_to_p10(p03, "message", carry)) == MESSAGE_P10


# ====================================================================== §3.4 Task, §3.1 states

TASK_P03: JSON = {"id": "t1", "contextId": "c1", "status": {
    "state": "TASK_STATE_CANCELLED", "timestamp": "2025-10-28T10:30:00Z",
    "message": {"role": "ROLE_AGENT", "messageId": "m2", "content": [{"text": "bye"}]}}}
TASK_P10: JSON = {"id": "t1", "contextId": "c1", "status": {
    "state": "TASK_STATE_CANCELED", "timestamp": "2025-10-28T10:30:00Z",
    "message": {"role": "ROLE_AGENT", "messageId": "m2", "parts": [{"text": "bye"}]}}}


def test_task_pair_and_the_cancelled_spelling() -> None:
    loss = LossReport()
    task = requests.response_to_p10(ops.GET_TASK, parse_p03(TASK_P03, v03.Task), loss)
    assert task is not None and dump_p10(task) == TASK_P10
    back = requests.response_to_p03(ops.GET_TASK, parse_p10(TASK_P10, pb.Task), loss)
    assert back is not None and dump_p03(back) == TASK_P03
    assert not loss
    # P03 is parsed leniently: the v1.0 spelling and a zone-less timestamp (§3.1, §3.4).
    sloppy = copy.deepcopy(TASK_P03)
    sloppy["status"].update(state="TASK_STATE_CANCELED", timestamp="2025-10-28T10:30:00")
    sloppy["kind"] = "task"
    assert norm03(sloppy, v03.Task) == TASK_P03


# ====================================================================== §3.5 Artifact

ARTIFACT_P03: JSON = {"artifactId": "a1", "name": "n", "description": "d",
                      "parts": [{"text": "ok"}, {"data": {"data": {"k": "v"}}}],
                      "metadata": {"m": 1}, "extensions": ["urn:e"]}
ARTIFACT_P10: JSON = {"artifactId": "a1", "name": "n", "description": "d",
                      "parts": [{"text": "ok"}, {"data": {"k": "v"}}],
                      "metadata": {"m": 1}, "extensions": ["urn:e"]}


def test_artifact_pair() -> None:
    loss = LossReport()
    art = objects.artifact_to_p10(parse_p03(ARTIFACT_P03, v03.Artifact), "artifact", loss)
    assert dump_p10(art) == ARTIFACT_P10
    back = objects.artifact_to_p03(parse_p10(ARTIFACT_P10, pb.Artifact), "artifact", loss)
    assert dump_p03(back) == ARTIFACT_P03
    assert not loss
    # The same keys in JSON, renumbered in proto (§3.5): the bytes do not carry over.
    wire = v03.Artifact(artifact_id="a1", name="n").SerializeToString()
    misread = pb.Artifact.FromString(wire)
    assert misread.description == "n" and misread.name == ""


# ====================================================================== §3.7 SendMessage

SEND_P03: JSON = {
    "message": {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "hi"}]},
    "configuration": {"blocking": False, "historyLength": 2, "acceptedOutputModes": ["text/plain"],
                      "pushNotification": {"url": "https://cb/x", "token": "tok", "authentication": {
                          "schemes": ["Bearer"], "credentials": "s3cr3t"}}}}
SEND_P10: JSON = {
    "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
    "configuration": {"returnImmediately": True, "historyLength": 2,
                      "acceptedOutputModes": ["text/plain"],
                      "taskPushNotificationConfig": {"url": "https://cb/x", "token": "tok",
                                                     "authentication": {"scheme": "Bearer",
                                                                        "credentials": "s3cr3t"}}}}


def test_send_message_pair() -> None:
    loss = LossReport()
    req = requests.request_to_p10(ops.SEND, parse_p03(SEND_P03, v03.SendMessageRequest), loss)
    assert dump_p10(req) == SEND_P10
    back = requests.request_to_p03(ops.SEND, parse_p10(SEND_P10, pb.SendMessageRequest), loss)
    # ProtoJSON omits `"blocking": false`; the proto field is false either way.
    assert dump_p03(back) == norm03(SEND_P03, v03.SendMessageRequest)
    assert not loss


@pytest.mark.parametrize(("p03_conf", "p10_conf"), [
    # §3.7: P03 → P10 returnImmediately = !blocking, so a configuration without the flag
    # is non-blocking, as py@v0.3 served it.
    ({}, {"returnImmediately": True}),
    ({"blocking": False}, {"returnImmediately": True}),
    ({"blocking": True}, {}),
    (None, None),  # no configuration at all: py@v0.3 and v1.0 both block
])
def test_send_configuration_blocking_to_p10(p03_conf: JSON | None,
                                            p10_conf: JSON | None) -> None:
    body: JSON = {"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}}
    if p03_conf is not None:
        body["configuration"] = p03_conf
    req = requests.request_to_p10(ops.SEND, parse_p03(body, v03.SendMessageRequest),
                                  LossReport())
    assert isinstance(req, pb.SendMessageRequest)
    assert req.HasField("configuration") is (p10_conf is not None)
    assert dump_p10(req).get("configuration") == p10_conf


@pytest.mark.parametrize(("p10_conf", "blocking"), [
    (None, True), ({}, True), ({"returnImmediately": False}, True),
    ({"returnImmediately": True}, False)])
def test_send_configuration_blocking_to_p03(p10_conf: JSON | None, blocking: bool) -> None:
    # §3.7: P10 → P03 sets blocking = !returnImmediately explicitly, true included.
    body: JSON = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}
    if p10_conf is not None:
        body["configuration"] = p10_conf
    req = requests.request_to_p03(ops.SEND, parse_p10(body, pb.SendMessageRequest),
                                  LossReport())
    assert isinstance(req, v03.SendMessageRequest)
    assert req.HasField("configuration") and req.configuration.blocking is blocking


def test_history_length_zero_rules() -> None:
    # v0.3 0 = all = v1.0 unset; v1.0 0 = none, omitted toward v0.3 and enforced on the
    # answer by answers.strip_history (§3.7).
    get03 = v03.GetTaskRequest(name="tasks/t1", history_length=0)
    req = requests.request_to_p10(ops.GET_TASK, get03, LossReport())
    assert isinstance(req, pb.GetTaskRequest) and not req.HasField("history_length")
    get10 = pb.GetTaskRequest(id="t1", history_length=0)
    out = requests.request_to_p03(ops.GET_TASK, get10, LossReport())
    assert dump_p03(out) == {"name": "tasks/t1"}
    answer = pb.Task(id="t1", history=[pb.Message(message_id="m")])
    assert list(answers.strip_history(answer, get10).history) == []
    kept = pb.Task(id="t1", history=[pb.Message(message_id="m")])
    assert len(answers.strip_history(kept, pb.GetTaskRequest(id="t1")).history) == 1
    send10 = parse_p10({"message": MESSAGE_P10, "configuration": {"historyLength": 0}},
                       pb.SendMessageRequest)
    sent = requests.request_to_p03(ops.SEND, send10, LossReport())
    assert "historyLength" not in dump_p03(sent)["configuration"]
    resp = pb.SendMessageResponse(task=pb.Task(id="t", history=[pb.Message(message_id="m")]))
    assert not answers.strip_history(resp, send10).task.history


# ====================================================================== §3.8 results, streams

def test_send_response_and_stream_items() -> None:
    loss = LossReport()
    resp = parse_p03({"task": {"id": "t1", "contextId": "c1",
                               "status": {"state": "TASK_STATE_COMPLETED"},
                               "artifacts": [{"artifactId": "a1", "parts": [{"text": "ok"}]}]}},
                     v03.SendMessageResponse)
    out = requests.response_to_p10(ops.SEND, resp, loss)
    assert out is not None and dump_p10(out) == {"task": {
        "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "parts": [{"text": "ok"}]}]}}
    msg = parse_p03({"message": MESSAGE_P03}, v03.StreamResponse)
    item = requests.response_to_p10(ops.STREAM, msg, loss)
    assert item is not None and dump_p10(item) == {"message": dump_p10(
        objects.message_to_p10(parse_p03(MESSAGE_P03, v03.Message), "", loss))}
    # `final` is the encoder's: dropped toward v1.0, passed in toward v0.3 (§3.6).
    ev03 = parse_p03({"statusUpdate": {"taskId": "t1", "contextId": "c1", "final": True,
                                       "status": {"state": "TASK_STATE_COMPLETED"}}},
                     v03.StreamResponse)
    ev = requests.response_to_p10(ops.SUBSCRIBE, ev03, loss)
    assert isinstance(ev, pb.StreamResponse)
    assert dump_p10(ev) == {"statusUpdate": {"taskId": "t1", "contextId": "c1",
                                             "status": {"state": "TASK_STATE_COMPLETED"}}}
    assert ends_v03_stream(ev)
    ev.status_update.status.state = 42  # a state no version names, from a newer backend
    assert not ends_v03_stream(ev)  # was: ValueError from TaskState.Name
    ev.status_update.status.state = pb.TASK_STATE_COMPLETED
    assert dump_p03(objects.stream_response_to_p03(ev, True, "", loss)) == dump_p03(ev03)
    assert not loss and loss.answering


# ====================================================================== §3.9 push configs

CREATE_P03: JSON = {"parent": "tasks/t1", "configId": "c1", "config": {
    "name": "tasks/t1/pushNotificationConfigs/c1",
    "pushNotificationConfig": {"id": "c1", "url": "https://cb/x", "token": "tok",
                               "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}}
CREATE_P10: JSON = {"taskId": "t1", "id": "c1", "url": "https://cb/x", "token": "tok",
                    "authentication": {"scheme": "Bearer", "credentials": "s"}}


def test_create_push_pair() -> None:
    loss = LossReport()
    req = requests.request_to_p10(ops.PUSH_CREATE, parse_create_push_body(CREATE_P03, "t1"),
                                  loss)
    assert dump_p10(req) == CREATE_P10
    back = requests.request_to_p03(ops.PUSH_CREATE,
                                   parse_p10(CREATE_P10, pb.TaskPushNotificationConfig), loss)
    assert isinstance(back, v03.CreateTaskPushNotificationConfigRequest)
    assert dump_create_push_body(back) == CREATE_P03
    # The answer is the bare v0.3 TaskPushNotificationConfig.
    answer = requests.response_to_p10(
        ops.PUSH_CREATE, parse_p03(CREATE_P03["config"], v03.TaskPushNotificationConfig), loss)
    assert answer is not None and dump_p10(answer) == CREATE_P10
    assert not loss


def test_create_push_body_in_the_bare_shape_and_the_default_id() -> None:
    # proto@v0.3.0 `body: "config"`: the body is the TaskPushNotificationConfig (§2).
    req = requests.request_to_p10(
        ops.PUSH_CREATE, parse_create_push_body(CREATE_P03["config"], "t1"), LossReport())
    assert dump_p10(req) == CREATE_P10
    # No id anywhere: the SDKs' default is the task id (§3.9).
    bare = {"pushNotificationConfig": {"url": "https://cb/x"}}
    req = requests.request_to_p10(ops.PUSH_CREATE, parse_create_push_body(bare, "t9"),
                                  LossReport())
    assert dump_p10(req) == {"taskId": "t9", "id": "t9", "url": "https://cb/x"}
    out = requests.request_to_p03(ops.PUSH_CREATE, pb.TaskPushNotificationConfig(
        task_id="t9", url="https://cb/x"), LossReport())
    assert isinstance(out, v03.CreateTaskPushNotificationConfigRequest)
    assert dump_create_push_body(out) == {"parent": "tasks/t9", "configId": "t9", "config": {
        "name": "tasks/t9/pushNotificationConfigs/t9",
        "pushNotificationConfig": {"id": "t9", "url": "https://cb/x"}}}


def test_several_auth_schemes_are_lossy() -> None:
    loss = LossReport()
    body = copy.deepcopy(CREATE_P03)
    body["config"]["pushNotificationConfig"]["authentication"]["schemes"] = ["Bearer", "Basic"]
    req = requests.request_to_p10(ops.PUSH_CREATE, parse_create_push_body(body, "t1"), loss)
    assert dump_p10(req) == CREATE_P10
    assert loss.request == ["config.pushNotificationConfig.authentication.schemes[1:]"]


def test_push_get_list_delete_names() -> None:
    loss = LossReport()
    get = requests.request_to_p10(ops.PUSH_GET, v03.GetTaskPushNotificationConfigRequest(
        name="tasks/t1/pushNotificationConfigs/c1"), loss)
    assert get == pb.GetTaskPushNotificationConfigRequest(task_id="t1", id="c1")
    assert requests.request_to_p03(ops.PUSH_DELETE, pb.DeleteTaskPushNotificationConfigRequest(
        task_id="t1", id="c1", tenant="x"), loss) == v03.DeleteTaskPushNotificationConfigRequest(
        name="tasks/t1/pushNotificationConfigs/c1")
    lst = requests.request_to_p03(ops.PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest(
        task_id="t1", page_size=5, page_token="p2"), loss)
    assert dump_p03(lst) == {"parent": "tasks/t1", "pageSize": 5, "pageToken": "p2"}
    resp = parse_p03({"configs": [CREATE_P03["config"]], "nextPageToken": "p3"},
                     v03.ListTaskPushNotificationConfigResponse)
    out = requests.response_to_p10(ops.PUSH_LIST, resp, loss)
    assert out is not None and dump_p10(out) == {"configs": [CREATE_P10], "nextPageToken": "p3"}
    assert requests.response_to_p10(ops.PUSH_DELETE, None, loss) is None
    assert not loss


@pytest.mark.parametrize(("op", "req", "field"), [
    (ops.GET_TASK, v03.GetTaskRequest(name="task/t1"), "name"),
    (ops.CANCEL, v03.CancelTaskRequest(name="tasks/"), "name"),
    (ops.SUBSCRIBE, v03.TaskSubscriptionRequest(name="tasks/a/b"), "name"),
    (ops.PUSH_GET, v03.GetTaskPushNotificationConfigRequest(name="tasks/t1"), "name"),
    (ops.PUSH_DELETE, v03.DeleteTaskPushNotificationConfigRequest(
        name="tasks/t1/pushNotificationConfig/c"), "name"),
    (ops.PUSH_LIST, v03.ListTaskPushNotificationConfigRequest(parent=""), "parent"),
    (ops.PUSH_CREATE, v03.CreateTaskPushNotificationConfigRequest(parent="x/t1"), "parent"),
])
def test_malformed_resource_names_are_invalid_params(op: str, req: Any, field: str) -> None:
    with pytest.raises(A2AError) as info:
        requests.request_to_p10(op, req, LossReport())
    assert info.value.name == "InvalidParamsError"
    assert info.value.message.startswith(field) and info.value.metadata["field"] == field


# ====================================================================== §3.10, §5 other ops


def test_cancel_metadata_is_lossy_and_list_tasks_is_unsupported() -> None:
    loss = LossReport()
    req = pb.CancelTaskRequest(id="t1", tenant="acme")
    req.metadata.update({"why": "x"})
    assert requests.request_to_p03(ops.CANCEL, req, loss) == v03.CancelTaskRequest(
        name="tasks/t1")
    assert loss.request == ["metadata"]
    with pytest.raises(A2AError) as info:
        requests.request_to_p03(ops.LIST_TASKS, pb.ListTasksRequest(), LossReport())
    assert info.value.name == "UnsupportedOperationError"


def test_bad_json_names_the_message_and_the_culprit() -> None:
    with pytest.raises(A2AError) as info:
        parse_p03({"content": "x"}, v03.Message)
    assert info.value.name == "InvalidParamsError" and "Message" in info.value.message
    with pytest.raises(A2AError) as info:
        parse_p03([1], v03.Task, error="InvalidAgentResponseError")
    assert info.value.name == "InvalidAgentResponseError" and "Task" in info.value.message
