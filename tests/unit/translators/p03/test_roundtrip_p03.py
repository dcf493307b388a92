"""Property tests: P10 → P03 → P10 through the public v0.3-proto translators.

What the v0.3 proto can carry must come back unchanged, and the LossReport must name
exactly the fields it cannot carry, no more and no fewer. The v0.3 messages travel each
way a codec would move them: as messages, as ProtoJSON (v0.3 REST), or as bytes (v0.3
gRPC). Also: file bytes in every BytesMode (reference §3.2), and why the two versions
cannot share bytes on the wire (§6.3).
"""

from __future__ import annotations

import base64
import binascii
import copy
from typing import TypeVar

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.p10_strategies import (
    IMPLIED_MEDIA_TYPE,
    JSON,
    ids,
    messages_p10,
    metadata,
    parts_p10,
    push_configs_p10,
    send_requests_p10,
    stream_responses_p10,
    tasks_p10,
)
from translators import operations as ops
from translators.errors import A2AError
from translators.loss import LossPolicy, LossReport
from translators.p03 import objects, requests
from translators.p03.common import BytesMode, file_bytes_to_p03, file_bytes_to_p10
from translators.p03.json import dump_p03, parse_p03
from translators.protojson import dump_p10, parse_p10

M = TypeVar("M", bound=ProtoMessage)

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

states = st.sampled_from(list(pb.TaskState.keys()))
timestamps = st.integers(-62135596800, 253402300799).map(
    lambda s: pb.Task(status=pb.TaskStatus(timestamp={"seconds": s})).status.timestamp)
encodings = st.sampled_from(["message", "json", "bytes"])


def over_the_wire(msg: M, encoding: str) -> M:
    """The v0.3 message as the other side of a codec sees it."""
    out: M = msg
    if encoding == "json":
        out = parse_p03(dump_p03(msg), type(msg))
    elif encoding == "bytes":
        out = type(msg).FromString(msg.SerializeToString())
    return out


def p10(data: JSON, cls: type[M]) -> M:
    return parse_p10(data, cls)


# ====================================================================== strategies: P10


# ====================================================================== expectations


def expect_part(part: JSON, path: str, carry: bool, lost: list[str]) -> JSON:
    out = copy.deepcopy(part)
    kind = next(k for k in ("text", "raw", "url", "data") if k in part)
    if kind in IMPLIED_MEDIA_TYPE:
        if out.get("mediaType") == IMPLIED_MEDIA_TYPE[kind]:
            del out["mediaType"]  # implied by the kind: no loss (same rule as J03)
        for key in ("mediaType", "filename"):
            if key in out and not carry:
                del out[key]
                lost.append(f"{path}.{key}")
    return out


def expect_message(msg: JSON, path: str, carry: bool, lost: list[str]) -> JSON:
    out = copy.deepcopy(msg)
    out["parts"] = [expect_part(p, f"{path}.parts[{i}]", carry, lost)
                    for i, p in enumerate(msg["parts"])]
    if "referenceTaskIds" in out and not carry:
        del out["referenceTaskIds"]
        lost.append(f"{path}.referenceTaskIds")
    return out


def expect_artifact(art: JSON, path: str, carry: bool, lost: list[str]) -> JSON:
    out = copy.deepcopy(art)
    out["parts"] = [expect_part(p, f"{path}.parts[{i}]", carry, lost)
                    for i, p in enumerate(art["parts"])]
    return out


def expect_status(status: JSON, path: str, carry: bool, lost: list[str]) -> JSON:
    out = copy.deepcopy(status)
    if "message" in out:
        out["message"] = expect_message(out["message"], f"{path}.message", carry, lost)
    return out


def expect_task(task: JSON, path: str, carry: bool, lost: list[str]) -> JSON:
    out = copy.deepcopy(task)
    out["status"] = expect_status(task["status"], f"{path}status", carry, lost)
    for key, fn in (("artifacts", expect_artifact), ("history", expect_message)):
        if key in out:
            out[key] = [fn(x, f"{path}{key}[{i}]", carry, lost) for i, x in enumerate(out[key])]
    return out


def norm(data: JSON, cls: type[ProtoMessage]) -> JSON:
    return dump_p10(parse_p10(data, cls))


# ====================================================================== objects


policies = st.sampled_from([LossPolicy.REPORT, LossPolicy.CARRY])


@SETTINGS
@given(parts_p10(), policies, encodings)
def test_part_roundtrip(part: JSON, policy: LossPolicy, encoding: str) -> None:
    loss = LossReport(policy=policy)
    sent = over_the_wire(objects.part_to_p03(p10(part, pb.Part), "p", loss), encoding)
    back = objects.part_to_p10(sent, "p", loss)
    lost: list[str] = []
    assert dump_p10(back) == norm(expect_part(part, "p", loss.carry, lost), pb.Part)
    assert sorted(loss.request) == sorted(lost)


@SETTINGS
@given(messages_p10(), policies, encodings)
def test_message_roundtrip(msg: JSON, policy: LossPolicy, encoding: str) -> None:
    loss = LossReport(policy=policy)
    sent = over_the_wire(objects.message_to_p03(p10(msg, pb.Message), "message", loss), encoding)
    back = objects.message_to_p10(sent, "message", loss)
    lost: list[str] = []
    assert dump_p10(back) == norm(expect_message(msg, "message", loss.carry, lost), pb.Message)
    assert sorted(loss.request) == sorted(lost)


@SETTINGS
@given(tasks_p10(), encodings)
def test_task_roundtrip_through_get_task(task: JSON, encoding: str) -> None:
    loss = LossReport()
    sent = requests.response_to_p03(ops.GET_TASK, p10(task, pb.Task), loss)
    assert isinstance(sent, v03.Task)
    back = requests.response_to_p10(ops.GET_TASK, over_the_wire(sent, encoding), loss)
    assert back is not None
    lost: list[str] = []
    assert dump_p10(back) == norm(expect_task(task, "", False, lost), pb.Task)
    assert sorted(loss.response) == sorted(lost) and not loss.request


@SETTINGS
@given(stream_responses_p10, st.booleans(), encodings)
def test_stream_response_roundtrip(item: JSON, final: bool, encoding: str) -> None:
    loss = LossReport()
    sent = objects.stream_response_to_p03(p10(item, pb.StreamResponse), final, "", loss)
    sent = over_the_wire(sent, encoding)
    if "statusUpdate" in item:
        assert sent.status_update.final is final
    back = requests.response_to_p10(ops.STREAM, sent, loss)
    assert back is not None
    lost: list[str] = []
    (kind, body), = item.items()
    if kind == "task":
        expected = expect_task(body, "task.", False, lost)
    elif kind == "message":
        expected = expect_message(body, "message", False, lost)
    elif kind == "statusUpdate":
        expected = {**body, "status": expect_status(body["status"], "statusUpdate.status",
                                                    False, lost)}
    else:
        expected = {**body, "artifact": expect_artifact(body["artifact"],
                                                        "artifactUpdate.artifact", False, lost)}
    assert dump_p10(back) == norm({kind: expected}, pb.StreamResponse)
    assert sorted(loss.request) == sorted(lost)


# ====================================================================== requests


@SETTINGS
@given(send_requests_p10(extras=True), encodings)
def test_send_request_roundtrip(req: JSON, encoding: str) -> None:
    loss = LossReport()
    sent = requests.request_to_p03(ops.SEND, p10(req, pb.SendMessageRequest), loss)
    assert isinstance(sent, v03.SendMessageRequest)
    # Always explicit toward v0.3 (§3.7): the flag is the inverse of returnImmediately.
    conf = req.get("configuration", {})
    assert sent.HasField("configuration")
    assert sent.configuration.blocking is not conf.get("returnImmediately", False)
    back = requests.request_to_p10(ops.SEND, over_the_wire(sent, encoding), loss)
    lost: list[str] = []
    expected = copy.deepcopy(req)
    expected.pop("tenant", None)  # routing consumed it; v0.3 has no tenant (§4.7)
    expected["message"] = expect_message(req["message"], "message", False, lost)
    exp_conf = expected.setdefault("configuration", {})
    if exp_conf.get("historyLength") == 0:
        del exp_conf["historyLength"]  # v1.0 0 = none: stripped from the answer instead
    tpnc = exp_conf.get("taskPushNotificationConfig")
    if tpnc is not None:
        tpnc.pop("tenant", None)
        if tpnc.pop("taskId", None):
            lost.append("configuration.taskPushNotificationConfig.taskId")
    assert dump_p10(back) == norm(expected, pb.SendMessageRequest)
    assert sorted(loss.request) == sorted(lost)


@SETTINGS
@given(push_configs_p10(extras=True), encodings)
def test_push_config_roundtrip_create_and_answer(cfg: JSON, encoding: str) -> None:
    expected = {k: v for k, v in cfg.items() if k != "tenant"}
    expected.setdefault("id", cfg["taskId"])  # the SDKs' default config id (§3.9)
    loss = LossReport()
    sent = requests.request_to_p03(ops.PUSH_CREATE, p10(cfg, pb.TaskPushNotificationConfig), loss)
    back = requests.request_to_p10(ops.PUSH_CREATE, over_the_wire(sent, encoding), loss)
    assert dump_p10(back) == norm(expected, pb.TaskPushNotificationConfig)
    answer = requests.response_to_p03(ops.PUSH_GET, p10(cfg, pb.TaskPushNotificationConfig), loss)
    assert answer is not None
    back = requests.response_to_p10(ops.PUSH_GET, over_the_wire(answer, encoding), loss)
    assert back is not None and dump_p10(back) == norm(expected, pb.TaskPushNotificationConfig)
    assert not loss


@SETTINGS
@given(st.lists(st.sampled_from(["Bearer", "Basic", "Digest"]), max_size=3), ids)
def test_auth_schemes_beyond_the_first_are_reported(schemes: list[str], creds: str) -> None:
    loss = LossReport()
    cfg = v03.PushNotificationConfig(url="https://cb", authentication=v03.AuthenticationInfo(
        schemes=schemes, credentials=creds))
    out = objects_push_config_to_p10(cfg, loss)
    assert out.authentication.scheme == (schemes[0] if schemes else "")
    assert loss.request == (["cfg.authentication.schemes[1:]"] if len(schemes) > 1 else [])


def objects_push_config_to_p10(cfg: v03.PushNotificationConfig,
                               loss: LossReport) -> pb.TaskPushNotificationConfig:
    from translators.p03.push import push_config_to_p10

    return push_config_to_p10(cfg, "t", "cfg", loss)


@SETTINGS
@given(ids, ids, st.none() | st.integers(0, 9), metadata | st.none(), ids, encodings)
def test_task_named_requests_roundtrip(task_id: str, config_id: str, history: int | None,
                                       meta: JSON | None, tenant: str, encoding: str) -> None:
    loss = LossReport()
    get = pb.GetTaskRequest(id=task_id, tenant=tenant)
    if history is not None:
        get.history_length = history
    want = pb.GetTaskRequest(id=task_id)
    if history:  # 0 cannot be said to v0.3 (§3.7)
        want.history_length = history
    cancel = pb.CancelTaskRequest(id=task_id, tenant=tenant, metadata=meta)
    cases: list[tuple[str, ProtoMessage, ProtoMessage]] = [
        (ops.GET_TASK, get, want),
        (ops.CANCEL, cancel, pb.CancelTaskRequest(id=task_id)),
        (ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id=task_id, tenant=tenant),
         pb.SubscribeToTaskRequest(id=task_id)),
        (ops.PUSH_GET, pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id),
         pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)),
        (ops.PUSH_DELETE, pb.DeleteTaskPushNotificationConfigRequest(
            task_id=task_id, id=config_id), pb.DeleteTaskPushNotificationConfigRequest(
            task_id=task_id, id=config_id)),
        (ops.PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest(
            task_id=task_id, page_size=history or 0, page_token=config_id, tenant=tenant),
         pb.ListTaskPushNotificationConfigsRequest(task_id=task_id, page_size=history or 0,
                                                   page_token=config_id)),
        (ops.EXTENDED_CARD, pb.GetExtendedAgentCardRequest(tenant=tenant),
         pb.GetExtendedAgentCardRequest()),
    ]
    for op, request, expected in cases:
        sent = requests.request_to_p03(op, request, loss)
        assert requests.request_to_p10(op, over_the_wire(sent, encoding), loss) == expected
    assert loss.request == (["metadata"] if meta else [])


# ====================================================================== file bytes (§3.2)

STRICT_B64 = st.binary(min_size=1, max_size=12).map(base64.b64encode)


@SETTINGS
@given(st.binary(max_size=24), st.sampled_from(["auto", "double"]))
def test_sdk_double_base64_roundtrips(content: bytes, decode: BytesMode) -> None:
    wire = file_bytes_to_p03(content, "double")
    assert wire == base64.b64encode(content)
    assert file_bytes_to_p10(wire, decode, "f") == content
    # In P03 JSON the text is base64-encoded once more by ProtoJSON.
    part = v03.Part(file=v03.FilePart(file_with_bytes=wire))
    assert base64.b64decode(dump_p03(part)["file"]["fileWithBytes"]) == wire


def _is_strict_b64(data: bytes) -> bool:
    try:
        return bool(data) and base64.b64encode(base64.b64decode(data, validate=True)) == data
    except (binascii.Error, ValueError):
        return False


@SETTINGS
@given(st.binary(max_size=24) | STRICT_B64)
def test_raw_bytes_in_each_decoding_mode(content: bytes) -> None:
    wire = file_bytes_to_p03(content, "raw")
    assert wire == content
    assert file_bytes_to_p10(wire, "raw", "f") == content
    # "auto" takes a spec-pure peer's content as is unless it *is* strict base64 text.
    expected = base64.b64decode(content) if _is_strict_b64(content) else content
    assert file_bytes_to_p10(wire, "auto", "f") == expected


@SETTINGS
@given(st.binary(min_size=1, max_size=24))
def test_double_mode_accepts_url_safe_and_unpadded(content: bytes) -> None:
    text = base64.urlsafe_b64encode(content).rstrip(b"=")
    assert file_bytes_to_p10(text, "double", "f") == content


def test_double_mode_refuses_what_is_not_base64() -> None:
    with pytest.raises(A2AError) as info:
        file_bytes_to_p10(b"\x89PNG\r\n", "double", "message.content[0].file.fileWithBytes")
    assert info.value.name == "InvalidParamsError"
    assert info.value.message.startswith("message.content[0].file.fileWithBytes")


def test_auto_mode_leaves_binary_and_sloppy_text_alone() -> None:
    for data in (b"\x89PNG\r\n", b"abc", b"ab=c", b"YWJj\n", b"-_8="):
        assert file_bytes_to_p10(data, "auto", "f") == data
    assert file_bytes_to_p10(b"YWJj", "auto", "f") == b"abc"


# ====================================================================== the wire (§6.3)


def test_v03_bytes_are_not_v10_bytes_but_the_translator_is_right() -> None:
    content = b"\x89PNG\r\n\x1a\n"
    sent = v03.SendMessageRequest(
        request=v03.Message(message_id="m1", role=v03.ROLE_USER, content=[
            v03.Part(text="see attached"),
            v03.Part(file=v03.FilePart(file_with_bytes=base64.b64encode(content),
                                       mime_type="image/png", name="a.png"))]),
        configuration=v03.SendMessageConfiguration(blocking=True, history_length=3))
    wire = sent.SerializeToString()

    # Read with the v1.0 descriptor, everything shifts by one field (§6.3): the message
    # lands in `tenant`, the configuration is read as the Message, and `blocking` (#4)
    # becomes its role; the v1.0 configuration is simply missing.
    misread = pb.SendMessageRequest.FromString(wire)
    assert misread.tenant.startswith("\n\x02m1")
    assert misread.message.role == pb.ROLE_USER and not misread.message.parts
    assert not misread.HasField("configuration")
    # Same number, same type, opposite meaning: blocking=true reads as returnImmediately.
    conf = pb.SendMessageConfiguration.FromString(sent.configuration.SerializeToString())
    assert conf.return_immediately is True
    # The v0.3 file part is not a v1.0 file part: FilePart's bytes land in `raw`.
    part = pb.Part.FromString(sent.request.content[1].SerializeToString())
    assert part.raw != content and part.media_type == ""

    loss = LossReport()
    got = requests.request_to_p10(ops.SEND, v03.SendMessageRequest.FromString(wire), loss)
    assert got == pb.SendMessageRequest(
        message=pb.Message(message_id="m1", role=pb.ROLE_USER, parts=[
            pb.Part(text="see attached"),
            pb.Part(raw=content, media_type="image/png", filename="a.png")]),
        configuration=pb.SendMessageConfiguration(return_immediately=False, history_length=3))
    assert not loss
