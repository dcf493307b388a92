"""Property tests: P10 → J03 → P10 and J03 → P10 → J03 through the public translators.

What v0.3 can carry must come back unchanged, and the LossReport must name exactly the
fields it cannot carry (reference §3.2 parts, §3.9 auth schemes), no more and no fewer.
The J03 each translation emits is also checked against the v0.3 JSON-RPC model that
ships with a2a-sdk (`a2a.compat.v0_3.types`, generated from types@v0.3.0's schema), and
the P10 against the v1.0 proto with unknown fields *refused* (py@HEAD parses strictly).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.j03_strategies import (
    messages_j03,
    push_configs_j03,
    send_params_j03,
    stream_items_j03,
    tasks_j03,
)
from tests.support.p10_strategies import (
    IMPLIED_MEDIA_TYPE,
    JSON,
    ids,
    messages_p10,
    ms,
    parts_p10,
    push_configs_p10,
    send_requests_p10,
    stream_responses_p10,
    tasks_p10,
)
from translators import operations as ops
from translators.dialects import jsonrpc as rpc
from translators.j03 import objects as o
from translators.j03.requests import send_params_to_p10
from translators.loss import CARRY_KEY, LossPolicy, LossReport
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03, V10

RPC = {V03: rpc.JSONRPC_V03, V10: rpc.JSONRPC_V10}

PartFn = Callable[[JSON, str], JSON]

SEND = ops.BY_NAME[ops.SEND]
GET_TASK = ops.BY_NAME[ops.GET_TASK]
PUSH_CREATE = ops.BY_NAME[ops.PUSH_CREATE]

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ====================================================================== walking parts


def walk_parts(parts: list[JSON], path: str, fn: PartFn) -> list[JSON]:
    return [fn(p, f"{path}[{i}]") for i, p in enumerate(parts)]


def walk_message(msg: JSON, path: str, fn: PartFn) -> JSON:
    return {**msg, "parts": walk_parts(msg["parts"], f"{path}.parts", fn)}


def walk_status(status: JSON, path: str, fn: PartFn) -> JSON:
    if "message" not in status:
        return status
    return {**status, "message": walk_message(status["message"], f"{path}.message", fn)}


def walk_artifact(art: JSON, path: str, fn: PartFn) -> JSON:
    return {**art, "parts": walk_parts(art["parts"], f"{path}.parts", fn)}


def walk_task(task: JSON, path: str, fn: PartFn) -> JSON:
    out = {**task, "status": walk_status(task["status"], f"{path}.status", fn)}
    if "artifacts" in task:
        out["artifacts"] = [walk_artifact(a, f"{path}.artifacts[{i}]", fn)
                            for i, a in enumerate(task["artifacts"])]
    if "history" in task:
        out["history"] = [walk_message(m, f"{path}.history[{i}]", fn)
                          for i, m in enumerate(task["history"])]
    return out


def walk_status_update(ev: JSON, path: str, fn: PartFn) -> JSON:
    return {**ev, "status": walk_status(ev["status"], f"{path}.status", fn)}


def walk_artifact_update(ev: JSON, path: str, fn: PartFn) -> JSON:
    return {**ev, "artifact": walk_artifact(ev["artifact"], f"{path}.artifact", fn)}


def walk_stream_response(resp: JSON, path: str, fn: PartFn) -> JSON:
    """A P10 StreamResponse; the J03 item has no wrapper, so paths start at `path`."""
    ((key, value),) = resp.items()
    walker = {"task": walk_task, "message": walk_message, "statusUpdate": walk_status_update,
              "artifactUpdate": walk_artifact_update}[key]
    return {key: walker(value, path, fn)}


def walk_j03_item(item: JSON, path: str, fn: PartFn) -> JSON:
    walker = {"task": walk_task, "message": walk_message, "status-update": walk_status_update,
              "artifact-update": walk_artifact_update}[item["kind"]]
    return walker(item, path, fn)


def reported(lost: list[str]) -> PartFn:
    """P10 → J03 under REPORT: mediaType (unless implied) and filename on text and data
    parts cannot travel (§3.2); they are expected in the report and not back."""

    def fn(part: JSON, path: str) -> JSON:
        if "text" not in part and "data" not in part:
            return part
        implied = IMPLIED_MEDIA_TYPE["text" if "text" in part else "data"]
        if part.get("mediaType", implied) != implied:
            lost.append(f"{path}.mediaType")
        if "filename" in part:
            lost.append(f"{path}.filename")
        return {k: v for k, v in part.items() if k not in ("mediaType", "filename")}

    return fn


def carried(part: JSON, path: str) -> JSON:
    """P10 → J03 under CARRY: only the media type the kind implies does not come back."""
    if "text" in part or "data" in part:
        implied = IMPLIED_MEDIA_TYPE["text" if "text" in part else "data"]
        if part.get("mediaType") == implied:
            return {k: v for k, v in part.items() if k != "mediaType"}
    return part


def j03_expected(lost: list[str]) -> PartFn:
    """J03 → P10: a file part with both bytes and uri keeps bytes (§3.2)."""

    def fn(part: JSON, path: str) -> JSON:
        file = part.get("file")
        if isinstance(file, dict) and "bytes" in file and "uri" in file:
            lost.append(f"{path}.file.uri")
            return {**part, "file": {k: v for k, v in file.items() if k != "uri"}}
        return part

    return fn


# ====================================================================== helpers


def canon(data: JSON, cls: type[Any]) -> JSON:
    """The ProtoJSON normal form of a generated P10 object."""
    return dump_p10(json_format.ParseDict(data, cls()))


def strict_p10(data: Any, cls: type[Any]) -> None:
    """What a translator emitted is v1.0 with nothing a strict parser would refuse."""
    json_format.ParseDict(copy.deepcopy(data), cls())


def instants_of(value: Any) -> Any:
    """J03 timestamps as the millisecond instant they name: v1.0 keeps milliseconds
    (§3.4 "Emit YYYY-MM-DDTHH:MM:SS.sssZ to v1.0"), and the spelling is free."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "timestamp" and isinstance(v, str):
                dt = datetime.fromisoformat(v)
                dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
                out[k] = ms(dt)
            else:
                out[k] = instants_of(v)
        return out
    if isinstance(value, list):
        return [instants_of(v) for v in value]
    return value


def without_false_flags(ev: JSON) -> JSON:
    """`append`/`lastChunk` false is the default in both versions; ProtoJSON omits it."""
    return {k: v for k, v in ev.items() if not (k in ("append", "lastChunk") and v is False)}


# ====================================================================== P10 → J03 → P10


@SETTINGS
@given(tasks_p10(), st.sampled_from([LossPolicy.REPORT, LossPolicy.CARRY]))
def test_task_p10_j03_p10(task: JSON, policy: LossPolicy) -> None:
    original = canon(task, pb.Task)
    loss = LossReport(policy=policy)
    j03 = RPC[V03].encode_result(GET_TASK, parse_p10(original, pb.Task), loss)
    v03.Task.model_validate(j03)
    back_loss = LossReport()
    back = RPC[V03].decode_result(GET_TASK, copy.deepcopy(j03), back_loss, GET_TASK.request())
    assert back is not None
    lost: list[str] = []
    fn = reported(lost) if policy is LossPolicy.REPORT else carried
    assert dump_p10(back) == walk_task(original, "result", fn)
    assert sorted(loss.fields()) == sorted(lost)
    assert loss.request == []  # an answer's losses are the response's
    assert not back_loss


@SETTINGS
@given(messages_p10(), st.sampled_from([LossPolicy.REPORT, LossPolicy.CARRY]))
def test_message_result_p10_j03_p10(msg: JSON, policy: LossPolicy) -> None:
    original = canon({"message": msg}, pb.SendMessageResponse)
    loss = LossReport(policy=policy)
    j03 = RPC[V03].encode_result(SEND, parse_p10(original, pb.SendMessageResponse), loss)
    v03.Message.model_validate(j03)
    back = RPC[V03].decode_result(SEND, copy.deepcopy(j03), LossReport(), SEND.request())
    assert back is not None
    lost: list[str] = []
    fn = reported(lost) if policy is LossPolicy.REPORT else carried
    assert dump_p10(back) == {"message": walk_message(original["message"], "result", fn)}
    assert sorted(loss.fields()) == sorted(lost)


@SETTINGS
@given(stream_responses_p10, st.booleans())
def test_stream_response_p10_j03_p10(resp: JSON, final: bool) -> None:
    original = canon(resp, pb.StreamResponse)
    loss = LossReport()
    j03 = RPC[V03].encode_event(parse_p10(original, pb.StreamResponse), final, loss)
    v03.SendStreamingMessageSuccessResponse.model_validate(
        {"jsonrpc": "2.0", "id": 1, "result": j03})
    if "statusUpdate" in original:
        assert j03["final"] is final
    back = RPC[V03].decode_event(copy.deepcopy(j03), LossReport(), pb.SendMessageRequest())
    lost: list[str] = []
    assert dump_p10(back) == walk_stream_response(original, "result", reported(lost))
    assert sorted(loss.fields()) == sorted(lost)


@SETTINGS
@given(stream_responses_p10)
def test_stream_response_carry(resp: JSON) -> None:
    original = canon(resp, pb.StreamResponse)
    loss = LossReport(policy=LossPolicy.CARRY)
    j03 = RPC[V03].encode_event(parse_p10(original, pb.StreamResponse), False, loss)
    back = RPC[V03].decode_event(copy.deepcopy(j03), loss, pb.SendMessageRequest())
    assert dump_p10(back) == walk_stream_response(original, "result", carried)
    assert not loss


@SETTINGS
@given(send_requests_p10(), st.sampled_from([LossPolicy.REPORT, LossPolicy.CARRY]))
def test_send_request_p10_j03_p10(req: JSON, policy: LossPolicy) -> None:
    original = canon(req, pb.SendMessageRequest)
    loss = LossReport(policy=policy)
    j03 = RPC[V03].encode_params(SEND, parse_p10(original, pb.SendMessageRequest), loss)
    v03.MessageSendParams.model_validate(j03)
    back_loss = LossReport()
    back = RPC[V03].decode_params(SEND, copy.deepcopy(j03), back_loss)
    lost: list[str] = []
    fn = reported(lost) if policy is LossPolicy.REPORT else carried
    expected = {**original, "message": walk_message(original["message"], "params.message", fn)}
    conf = dict(expected.get("configuration", {}))
    # v1.0 historyLength 0 ("none") has no v0.3 form: it is omitted and the gateway strips
    # the history from the answer instead (§3.7), so it is not a loss.
    if conf.get("historyLength") == 0:
        del conf["historyLength"]
    # `blocking` is always sent to v0.3, so an absent configuration comes back empty.
    expected["configuration"] = conf
    assert j03["configuration"]["blocking"] is not conf.get("returnImmediately", False)
    assert dump_p10(back) == expected
    assert sorted(loss.fields()) == sorted(lost)
    assert loss.response == []
    assert not back_loss


@SETTINGS
@given(push_configs_p10())
def test_push_config_p10_j03_p10(cfg: JSON) -> None:
    original = canon(cfg, pb.TaskPushNotificationConfig)
    loss = LossReport()
    msg = parse_p10(original, pb.TaskPushNotificationConfig)
    j03_params = RPC[V03].encode_params(PUSH_CREATE, msg, loss)
    j03_result = RPC[V03].encode_result(PUSH_CREATE, msg, loss)
    assert j03_params == j03_result
    v03.TaskPushNotificationConfig.model_validate(j03_params)
    back = RPC[V03].decode_params(PUSH_CREATE, copy.deepcopy(j03_params), loss)
    assert dump_p10(back) == original
    back = RPC[V03].decode_result(PUSH_CREATE, copy.deepcopy(j03_result), loss, PUSH_CREATE.request())
    assert dump_p10(back) == original
    assert not loss


# ====================================================================== J03 → P10 → J03


def _assert_j03_roundtrip(back: Any, expected: JSON) -> None:
    assert instants_of(back) == instants_of(expected)


@SETTINGS
@given(tasks_j03())
def test_task_j03_p10_j03(task: JSON) -> None:
    v03.Task.model_validate(task)
    snapshot = copy.deepcopy(task)
    loss = LossReport()
    strict_p10(o.task_to_p10(copy.deepcopy(task), "result", LossReport()), pb.Task)
    canonical = RPC[V03].decode_result(GET_TASK, task, loss, GET_TASK.request())
    assert task == snapshot  # translators do not mutate what they read
    back = RPC[V03].encode_result(GET_TASK, canonical, LossReport())
    lost: list[str] = []
    expected = walk_task(snapshot, "result", j03_expected(lost))
    _assert_j03_roundtrip(back, expected)
    assert sorted(loss.fields()) == sorted(lost)


@SETTINGS
@given(stream_items_j03)
def test_stream_item_j03_p10_j03(item: JSON) -> None:
    v03.SendStreamingMessageSuccessResponse.model_validate(
        {"jsonrpc": "2.0", "id": 1, "result": item})
    snapshot = copy.deepcopy(item)
    loss = LossReport()
    strict_p10(o.stream_item_to_p10(copy.deepcopy(item), "result", LossReport()),
               pb.StreamResponse)
    canonical = RPC[V03].decode_event(item, loss, pb.SendMessageRequest())
    assert item == snapshot
    # `final` is the stream encoder's to decide (§3.6); give back what came in.
    back = RPC[V03].encode_event(canonical, bool(item.get("final")), LossReport())
    lost: list[str] = []
    expected = walk_j03_item(snapshot, "result", j03_expected(lost))
    if expected["kind"] == "artifact-update":
        expected = without_false_flags(expected)
    _assert_j03_roundtrip(back, expected)
    assert sorted(loss.fields()) == sorted(lost)


@SETTINGS
@given(messages_j03())
def test_message_result_j03_p10_j03(msg: JSON) -> None:
    loss = LossReport()
    canonical = RPC[V03].decode_result(SEND, copy.deepcopy(msg), loss, SEND.request())
    back = RPC[V03].encode_result(SEND, canonical, LossReport())
    lost: list[str] = []
    _assert_j03_roundtrip(back, walk_message(msg, "result", j03_expected(lost)))
    assert sorted(loss.fields()) == sorted(lost)


def _expected_push_config(cfg: JSON, path: str, lost: list[str]) -> JSON:
    """Several schemes: v1.0 keeps the first (§3.9)."""
    auth = cfg.get("authentication")
    if auth is None or len(auth["schemes"]) <= 1:
        return cfg
    lost.append(f"{path}.authentication.schemes[1:]")
    return {**cfg, "authentication": {**auth, "schemes": auth["schemes"][:1]}}


@SETTINGS
@given(ids, push_configs_j03())
def test_push_config_j03_p10_j03(task_id: str, cfg: JSON) -> None:
    params = {"taskId": task_id, "pushNotificationConfig": cfg}
    v03.TaskPushNotificationConfig.model_validate(params)
    loss = LossReport()
    canonical = RPC[V03].decode_params(PUSH_CREATE, copy.deepcopy(params), loss)
    back = RPC[V03].encode_params(PUSH_CREATE, canonical, LossReport())
    lost: list[str] = []
    expected = {"taskId": task_id, "pushNotificationConfig": _expected_push_config(
        cfg, "params.pushNotificationConfig", lost)}
    assert back == expected
    assert loss.request == lost


@SETTINGS
@given(send_params_j03())
def test_send_params_j03_p10_j03(params: JSON) -> None:
    v03.MessageSendParams.model_validate(params)
    loss = LossReport()
    strict_p10(send_params_to_p10(copy.deepcopy(params), LossReport()), pb.SendMessageRequest)
    canonical = RPC[V03].decode_params(SEND, copy.deepcopy(params), loss)
    back = RPC[V03].encode_params(SEND, canonical, LossReport())
    lost: list[str] = []
    expected: JSON = {**params, "message": walk_message(params["message"], "params.message",
                                                        j03_expected(lost))}
    conf = dict(params.get("configuration", {}))
    conf.setdefault("blocking", True)  # absent = blocking in v0.3 (py) and v1.0
    if conf.get("historyLength") == 0:  # 0 = all history in v0.3 = unset in v1.0 (§3.7)
        del conf["historyLength"]
    if "pushNotificationConfig" in conf:
        conf["pushNotificationConfig"] = _expected_push_config(
            conf["pushNotificationConfig"], "params.configuration.pushNotificationConfig", lost)
    expected["configuration"] = conf
    _assert_j03_roundtrip(back, expected)
    assert sorted(loss.fields()) == sorted(lost)


# ====================================================================== CARRY specifics


@SETTINGS
@given(parts_p10())
def test_carry_uses_the_private_metadata_key(part: JSON) -> None:
    original = canon({"messageId": "m", "role": "ROLE_USER", "parts": [part]}, pb.Message)["parts"][0]
    loss = LossReport(policy=LossPolicy.CARRY)
    j03 = o.part_to_j03(original, "p", loss)
    assert not loss
    kept = carried(original, "p")
    if "text" in kept or "data" in kept:
        extra = {k: kept[k] for k in ("mediaType", "filename") if k in kept}
        assert j03.get("metadata", {}).get(CARRY_KEY) == (extra or None)
    else:
        assert CARRY_KEY not in j03.get("metadata", {})
    assert o.part_to_p10(j03, "p", loss) == kept
    assert not loss
