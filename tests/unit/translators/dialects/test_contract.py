"""The contract of translators/dialects/contract.py, checked by the same code on all six
rows of the registry: what a row's backend side sends, its own front door reads back as
the canonical request it was made from; what its client side writes (an answer, a stream
event, an error), its backend side reads back as it was.

A v1.0 row loses nothing. A v0.3 row may lose what v0.3 cannot express: there every
field that did not come back must be one its LossReport names, and the report names
nothing else for a v1.0 row.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import p10_strategies as p10
from translators import operations as ops
from translators.answers import wants_no_history
from translators.dialects import DIALECTS, grpc, jsonrpc, rest
from translators.dialects.base import BACKEND_HEADERS, DecodedCall, WireRequest
from translators.dialects.contract import BackendCodec, Dialect, HttpAnswer
from translators.errors import ERROR_KINDS, A2AError, a2a_error
from translators.grpc_errors import GrpcStatus, error_from_grpc
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03, V10, VersionRules

ROWS = [pytest.param(d, id=f"{b}-{v}") for (b, v), d in DIALECTS.items()]
HOOK = "https://hooks.example/a2a"


def _task(task_id: str = "t1") -> pb.Task:
    task = pb.Task(id=task_id, context_id="c1")
    task.status.state = pb.TASK_STATE_WORKING
    task.status.message.message_id, task.status.message.role = "m2", pb.ROLE_AGENT
    task.status.message.parts.add(text="working")
    task.artifacts.add(artifact_id="a1", name="result").parts.add(text="hello")
    task.history.add(message_id="m1", role=pb.ROLE_USER).parts.add(text="question")
    task.metadata.update({"m": 1})
    return task


def _message() -> pb.Message:
    msg = pb.Message(message_id="m1", role=pb.ROLE_USER, context_id="c1",
                     reference_task_ids=["t0"], extensions=["https://ext.example/x"])
    msg.parts.add(text="hello")
    msg.parts.add(raw=b"\x00\x01", filename="b.bin", media_type="application/octet-stream")
    msg.parts.add(url="https://files.example/y", filename="y")
    msg.metadata.update({"a": 1})
    return msg


def _push(task_id: str = "t1") -> pb.TaskPushNotificationConfig:
    return pb.TaskPushNotificationConfig(
        task_id=task_id, id="c1", url=HOOK, token="tok",
        authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="c"))


def _send() -> pb.SendMessageRequest:
    request = pb.SendMessageRequest(message=_message())
    request.configuration.accepted_output_modes.append("text/plain")
    request.configuration.history_length = 3
    request.metadata.update({"b": 2})
    return request


# Per operation: canonical requests, and the answer a backend gives to the first.
CASES: dict[str, tuple[list[ProtoMessage], ProtoMessage | None]] = {
    ops.SEND: ([_send(), pb.SendMessageRequest(message=_message())],
               pb.SendMessageResponse(task=_task())),
    ops.STREAM: ([_send()], None),
    ops.GET_TASK: ([pb.GetTaskRequest(id="t1", history_length=2), pb.GetTaskRequest(id="t 1")],
                   _task()),
    ops.LIST_TASKS: ([pb.ListTasksRequest(context_id="c1", page_size=10,
                                          status=pb.TASK_STATE_WORKING, include_artifacts=True)],
                     pb.ListTasksResponse(tasks=[_task(), _task("t2")], next_page_token="n",
                                          page_size=10, total_size=2)),
    ops.CANCEL: ([pb.CancelTaskRequest(id="t1")], _task()),
    ops.SUBSCRIBE: ([pb.SubscribeToTaskRequest(id="t1")], None),
    ops.PUSH_CREATE: ([_push()], _push()),
    ops.PUSH_GET: ([pb.GetTaskPushNotificationConfigRequest(task_id="t1", id="c1")], _push()),
    ops.PUSH_LIST: ([pb.ListTaskPushNotificationConfigsRequest(task_id="t1")],
                    pb.ListTaskPushNotificationConfigsResponse(configs=[_push()])),
    ops.PUSH_DELETE: ([pb.DeleteTaskPushNotificationConfigRequest(task_id="t1", id="c1")], None),
    ops.EXTENDED_CARD: ([pb.GetExtendedAgentCardRequest()], None),
}
EVENTS = [
    pb.StreamResponse(task=_task()),
    pb.StreamResponse(message=pb.Message(message_id="m3", role=pb.ROLE_AGENT, context_id="c1",
                                         task_id="t1", parts=[pb.Part(text="hi")])),
    pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=pb.TaskStatus(state=pb.TASK_STATE_COMPLETED))),
    pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id="t1", context_id="c1", append=True, last_chunk=True,
        artifact=pb.Artifact(artifact_id="a1", parts=[pb.Part(text="more")]))),
]


def served(dialect: Dialect, op: ops.Operation) -> bool:
    """v0.3 has every operation but ListTasks (the operations table says which)."""
    return dialect.version == V10 or op.jsonrpc_v03 is not None


def front_door(dialect: Dialect, out: WireRequest) -> DecodedCall[Any]:
    """The row's own front door, fed a backend request as a client would send it (v1.0
    peers declare their version, reference §1)."""
    declared = BACKEND_HEADERS[dialect.version].get("a2a-version")
    rules = VersionRules()
    if dialect.binding == "JSONRPC":
        return jsonrpc.decode_call(out.body, declared, None, rules)
    if dialect.binding == "HTTP+JSON":
        query = parse_qs(urlencode(out.query), keep_blank_values=True)
        # The server routes on the decoded path (aiohttp's request.path).
        return rest.decode_call(out.verb, unquote(out.path), query, out.body, declared, rules,
                                "application/json")
    name = out.path.rsplit("/", 1)[1]
    return grpc.decode_call(grpc.wire_methods(dialect.version)[name], out.body, declared,
                            None, rules, 1 << 20)


def _differences(a: Any, b: Any, at: str = "") -> set[str]:
    """The JSON paths (`message.parts[1].raw`) at which two ProtoJSON values differ. An
    empty object is no object: v0.3 sends a configuration (`blocking: true`) where a
    v1.0 request had none, which reads back as an empty one, meaning the same."""
    a, b = (None if x == {} else x for x in (a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return {p for k in a.keys() | b.keys()
                for p in _differences(a.get(k), b.get(k), f"{at}.{k}" if at else k)}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return {p for i, (x, y) in enumerate(zip(a, b, strict=True))
                for p in _differences(x, y, f"{at}[{i}]")}
    return set() if a == b else {at}


def _plain(value: Any) -> Any:
    """A ProtoJSON value without the media type v0.3 implies (text/plain for a text part,
    application/json for a data part): v0.3 has no field for it, and none is lost."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _plain(v) for k, v in value.items()}
    kind = "text" if "text" in out else "data" if "data" in out else None
    if kind is not None and out.get("mediaType") == p10.IMPLIED_MEDIA_TYPE[kind]:
        del out["mediaType"]
    return out


def _bare(path: str) -> str:
    # JSON-RPC names what it lost from the envelope down (`params.`, `result.`).
    return re.sub(r"^(params|result)\.", "", re.sub(r"\[\d+\]", "", path))


def assert_same_but_lost(dialect: Dialect, before: ProtoMessage | None,
                         after: ProtoMessage | None, lost: list[str]) -> None:
    """``after`` is ``before``; on a v0.3 row, except at fields the loss report names."""
    if dialect.version == V10:
        assert lost == []
        assert after == before
        return
    sent = _plain(dump_p10(before)) if before is not None else None
    if before is not None and wants_no_history(before):
        # v0.3 has no `historyLength: 0` (0 is all there): not sent, and not lost
        # either, the gateway empties the answer's history (translators/answers.py).
        assert sent is not None
        sent.get("configuration", sent).pop("historyLength")
    differ = _differences(sent, _plain(dump_p10(after)) if after is not None else None)
    named = {_bare(p) for p in lost}
    unnamed = {p for p in differ
               if not any(_bare(p) == n or _bare(p).startswith((n + ".", n + "["))
                          for n in named)}
    assert not unnamed, f"changed without a loss report: {sorted(unnamed)} (lost: {lost})"


def _codec(dialect: Dialect, op: ops.Operation, request: ProtoMessage,
           tenant: str | None = None, loss: LossReport | None = None) -> BackendCodec:
    return dialect.backend(op, request, LossReport() if loss is None else loss, tenant)


# ---------------------------------------------------------------- requests


@pytest.mark.parametrize("dialect", ROWS)
@pytest.mark.parametrize("op_name", list(CASES))
def test_a_backend_request_decodes_back_at_the_rows_front_door(dialect: Dialect,
                                                               op_name: str) -> None:
    op = ops.BY_NAME[op_name]
    for request in CASES[op_name][0]:
        loss = LossReport()
        if not served(dialect, op):
            with pytest.raises(A2AError) as refused:
                dialect.backend(op, request, loss)
            assert refused.value.name == "UnsupportedOperationError"
            continue
        codec = dialect.backend(op, request, loss)
        assert codec.dialect is dialect
        assert len(codec.requests) == (2 if dialect.binding == "HTTP+JSON"
                                       and op.name == ops.SUBSCRIBE else 1)
        for out in codec.requests:  # HTTP+JSON's subscribe: both verbs are its routes
            decoded = front_door(dialect, out)
            assert (decoded.op, decoded.dialect, decoded.tenant) == (op, dialect, None)
            assert_same_but_lost(dialect, request, decoded.request,
                                 list(loss.request) + list(decoded.loss.request))


def test_a_v03_row_names_what_it_loses() -> None:
    """The rule above is not empty: v0.3's proto bindings have no referenceTaskIds and no
    metadata on a cancel, and say so; v0.3 JSON-RPC carries them."""
    for (binding, version), dialect in DIALECTS.items():
        if version != V03:
            continue
        lost = []
        for op_name in (ops.SEND, ops.CANCEL):
            loss = LossReport()
            request = pb.CancelTaskRequest(id="t1") if op_name == ops.CANCEL else _send()
            if op_name == ops.CANCEL:
                request.metadata.update({"k": 1})
            dialect.backend(ops.BY_NAME[op_name], request, loss)
            lost += loss.request
        expected = [] if binding == "JSONRPC" else ["message.referenceTaskIds", "metadata"]
        assert lost == expected, binding


@pytest.mark.parametrize("dialect", ROWS)
def test_the_backends_own_tenant_travels_in_v10_requests(dialect: Dialect) -> None:
    codec = _codec(dialect, ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id="t1"), "acme")
    out = codec.requests[0]
    if dialect.binding == "HTTP+JSON":  # v1.0 routes take a tenant prefix, v0.3 ones none
        assert out.path == ("/acme/tasks/t1" if dialect.version == V10 else "/v1/tasks/t1")
    decoded = front_door(dialect, out)
    # v0.3 messages have none: the gRPC egress names it in metadata (x-a2a-tenant).
    assert decoded.tenant == ("acme" if dialect.version == V10 else None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=p10.send_requests_p10(), row=st.sampled_from(list(DIALECTS.values())))
def test_any_send_request_decodes_back(body: dict[str, Any], row: Dialect) -> None:
    request = parse_p10(body, pb.SendMessageRequest)
    loss = LossReport()
    codec = row.backend(ops.BY_NAME[ops.SEND], request, loss)
    decoded = front_door(row, codec.requests[0])
    assert_same_but_lost(row, request, decoded.request,
                         list(loss.request) + list(decoded.loss.request))


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize("dialect", ROWS)
@pytest.mark.parametrize("op_name", [n for n, (_, answer) in CASES.items()
                                     if answer is not None or n == ops.PUSH_DELETE])
def test_a_client_answer_reads_back_through_the_backend_side(dialect: Dialect,
                                                             op_name: str) -> None:
    op = ops.BY_NAME[op_name]
    if not served(dialect, op):
        return
    request, answer = CASES[op_name][0][0], CASES[op_name][1]
    loss = LossReport()
    codec = _codec(dialect, op, request, loss=loss)
    written = LossReport()
    raw = dialect.client(op, codec.requests[0].rpc_id).answer(answer, written)
    read = codec.read(200, raw)
    if answer is None:
        assert read is None
        return
    assert_same_but_lost(dialect, answer, read, written.answer_losses() + loss.answer_losses())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=p10.tasks_p10(), row=st.sampled_from(list(DIALECTS.values())))
def test_any_task_answer_reads_back(body: dict[str, Any], row: Dialect) -> None:
    task = parse_p10(body, pb.Task)
    op = ops.BY_NAME[ops.GET_TASK]
    loss = LossReport()
    codec = row.backend(op, pb.GetTaskRequest(id=task.id), loss)
    written = LossReport()
    read = codec.read(200, row.client(op, codec.requests[0].rpc_id).answer(task, written))
    assert_same_but_lost(row, task, read, written.answer_losses() + loss.answer_losses())


@pytest.mark.parametrize("dialect", ROWS)
def test_a_pass_through_answer_is_kept_as_it_came(dialect: Dialect) -> None:
    op = ops.BY_NAME[ops.GET_TASK]
    wire = WireRequest(b"", rpc_id="client-1")
    codec = dialect.backend(op, pb.GetTaskRequest(id="t1"), LossReport(), wire=wire)
    raw = dialect.client(op, "client-1").answer(_task(), LossReport())
    answer = codec.forwarded(200, "application/json", raw)
    assert answer is not None and answer.body == raw and answer.document is not None
    # An error is never passed on as it came: it is read, and raised by its name.
    refusal = dialect.client(op, "client-1").refusal(a2a_error("TaskNotFoundError", "no t1"))
    if not isinstance(refusal, HttpAnswer):
        assert isinstance(refusal, GrpcStatus)  # a gRPC error is a status, never bytes
        return
    assert codec.forwarded(refusal.status, refusal.content_type, refusal.body) is None
    with pytest.raises(A2AError) as raised:
        codec.read(refusal.status, refusal.body)
    assert raised.value.name == "TaskNotFoundError"


# ---------------------------------------------------------------- stream events


@pytest.mark.parametrize("dialect", ROWS)
@pytest.mark.parametrize("op_name", [ops.STREAM, ops.SUBSCRIBE])
def test_stream_events_read_back_through_the_backend_side(dialect: Dialect,
                                                          op_name: str) -> None:
    op = ops.BY_NAME[op_name]
    loss = LossReport()
    codec = _codec(dialect, op, CASES[op_name][0][0], loss=loss)
    client = dialect.client(op, codec.requests[0].rpc_id)
    reader = codec.events(1 << 20)
    for i, event in enumerate(EVENTS):
        written = LossReport()
        frame = client.event_frame(event, i == len(EVENTS) - 1, written)
        (read,) = reader.feed(frame)  # one frame, one event (gRPC: one message)
        assert_same_but_lost(dialect, event, read, written.answer_losses()
                             + loss.answer_losses())
    assert list(reader.close()) == []


# ---------------------------------------------------------------- errors

ERRORS = [kind.name for kind in ERROR_KINDS]
# What v0.3 cannot name, and reads back as the error its code (JSON-RPC) or its HTTP
# status (HTTP+JSON: a v0.3 body is `{"message"}`) stands for; gRPC v0.3 prefixes the
# message with the error's name, so it loses none. The message always comes back.
V03_READS_AS: dict[str, dict[str, str]] = {
    "JSONRPC": {
        "MethodNotAllowedError": "MethodNotFoundError",  # both -32601
        "TenantNotFoundError": "InvalidParamsError",  # both -32602
        "PayloadTooLargeError": "InvalidRequestError", "RequestTimeoutError":
        "InvalidRequestError",  # -32600
        **dict.fromkeys(["BackendUnavailableError", "BackendTimeoutError",
                         "StoreUnavailableError", "ResourceExhaustedError",  # -32603
                         "UnauthenticatedError", "PermissionDeniedError"],  # -32000
                        "InternalError"),
    },
    "HTTP+JSON": {
        "PushNotificationNotSupportedError": "UnsupportedOperationError",  # 501
        "MethodNotAllowedError": "UnsupportedOperationError",  # 405
        "ExtendedAgentCardNotConfiguredError": "TaskNotFoundError",  # 404
        "MethodNotFoundError": "TaskNotFoundError", "TenantNotFoundError": "TaskNotFoundError",
        "BackendUnavailableError": "InvalidAgentResponseError",  # 502
        "BackendTimeoutError": "InternalError", "StoreUnavailableError": "InternalError",
        **dict.fromkeys(["ExtensionSupportRequiredError", "VersionNotSupportedError",
                         "JSONParseError", "ResourceExhaustedError", "PayloadTooLargeError",
                         "RequestTimeoutError", "UnauthenticatedError",
                         "PermissionDeniedError"], "InvalidRequestError"),
    },
}


def _error_read(dialect: Dialect, codec: BackendCodec, err: A2AError) -> A2AError:
    refusal = dialect.client(ops.BY_NAME[ops.GET_TASK], codec.requests[0].rpc_id).refusal(err)
    if isinstance(refusal, GrpcStatus):
        return error_from_grpc(refusal.code, refusal.message, refusal.details)
    assert isinstance(refusal, HttpAnswer)
    with pytest.raises(A2AError) as raised:
        codec.read(refusal.status, refusal.body)
    return raised.value


@pytest.mark.parametrize("dialect", ROWS)
def test_an_a2a_error_reads_back_by_its_name(dialect: Dialect) -> None:
    codec = _codec(dialect, ops.BY_NAME[ops.GET_TASK], pb.GetTaskRequest(id="t1"))
    lost = V03_READS_AS.get(dialect.binding, {}) if dialect.version == V03 else {}
    for name in ERRORS:
        err = a2a_error(name, f"the {name}")
        back = _error_read(dialect, codec, err)
        assert back.name == lost.get(name, name), (name, back.name, back.message)
        assert "the " + name in back.message


@pytest.mark.parametrize("dialect", [pytest.param(d, id=f"{b}-{v}")
                                     for (b, v), d in DIALECTS.items() if b != "GRPC"])
def test_an_error_event_in_a_stream_reads_back_by_its_name(dialect: Any) -> None:
    op = ops.BY_NAME[ops.STREAM]
    codec = _codec(dialect, op, _send())
    client = dialect.client(op, codec.requests[0].rpc_id)
    reader = codec.events(1 << 20)
    with pytest.raises(A2AError) as raised:
        list(reader.feed(client.error_frame(a2a_error("TaskNotFoundError", "gone"))))
    # A v0.3 HTTP+JSON error event is `{"message"}` without a status: no name to read.
    lost = dialect.binding == "HTTP+JSON" and dialect.version == V03
    assert raised.value.name == ("InternalError" if lost else "TaskNotFoundError")
    assert "gone" in raised.value.message

