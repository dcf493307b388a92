"""The gRPC dialect tables: methods of both packages, v0.3 bytes, error statuses."""

from __future__ import annotations

import base64

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.rpc import error_details_pb2, status_pb2

from gateway.config.models import ConfigError, parse_config
from translators import operations as ops
from translators.dialects import grpc as wire
from translators.errors import ERROR_KINDS, A2AError, a2a_error
from translators.grpc_errors import (
    error_from_grpc,
    error_to_grpc,
    error_to_grpc_v03,
    error_to_grpc_v10,
)
from translators.loss import LossReport
from translators.versions import V03, V10

CONTENT = b"\x00\x01\x02binary"


def _v03_send_bytes() -> bytes:
    """What a v0.3 SDK client sends: blocking=true and a file part (base64 text inside,
    the v0.3 SDKs' convention for `file_with_bytes`)."""
    part = v03pb.Part(file=v03pb.FilePart(file_with_bytes=base64.b64encode(CONTENT),
                                          mime_type="application/octet-stream",
                                          name="blob.bin"))
    message = v03pb.Message(message_id="m1", role=v03pb.ROLE_USER,
                            content=[v03pb.Part(text="task: x"), part])
    configuration = v03pb.SendMessageConfiguration(blocking=True,
                                                   accepted_output_modes=["text/plain"])
    return v03pb.SendMessageRequest(request=message,
                                    configuration=configuration).SerializeToString()


def test_v03_send_bytes_are_read_with_the_v03_schema() -> None:
    raw = _v03_send_bytes()
    loss = LossReport()
    request = wire.GRPC_V03.decode_request(wire.wire_methods(V03)["SendMessage"], raw, loss)
    assert isinstance(request, pb.SendMessageRequest)
    assert request.tenant == ""
    assert request.message.message_id == "m1" and request.message.role == pb.ROLE_USER
    text, file = request.message.parts
    assert text.text == "task: x"
    assert (file.raw, file.filename, file.media_type) == (
        CONTENT, "blob.bin", "application/octet-stream")
    assert request.configuration.return_immediately is False  # blocking=true
    assert list(request.configuration.accepted_output_modes) == ["text/plain"]
    assert not loss


def test_the_same_bytes_misread_with_the_v10_schema() -> None:
    """Reference §6.3: nothing fails loudly, everything shifts by one field."""
    raw = _v03_send_bytes()
    wrong = pb.SendMessageRequest.FromString(raw)
    assert wrong.tenant.startswith("\n\x02m1")  # the whole Message lands in `tenant`
    # ... and the configuration is read as the Message: blocking=true became the role.
    assert wrong.message.message_id == "text/plain" and wrong.message.role == pb.ROLE_USER
    assert not wrong.HasField("configuration")
    # The configuration on its own: #4 `blocking` is v1.0's `return_immediately`.
    conf = v03pb.SendMessageConfiguration(blocking=True).SerializeToString()
    assert pb.SendMessageConfiguration.FromString(conf).return_immediately is True
    # A file part becomes `raw` garbage: the FilePart's own bytes.
    part = v03pb.SendMessageRequest.FromString(raw).request.content[1]
    assert pb.Part.FromString(part.SerializeToString()).raw.endswith(b"blob.bin")


def test_method_tables_cover_both_services() -> None:
    v10, v03 = wire.wire_methods(V10), wire.wire_methods(V03)
    assert set(v10) == {op.name for op in ops.OPERATIONS}
    assert set(v03) == {op.grpc_v03 for op in ops.OPERATIONS if op.grpc_v03}
    assert v03["TaskSubscription"].op.name == ops.SUBSCRIBE and v03["TaskSubscription"].streaming
    assert v03["GetAgentCard"].path == "/a2a.v1.A2AService/GetAgentCard"
    assert v10["ListTaskPushNotificationConfigs"].path == \
        "/lf.a2a.v1.A2AService/ListTaskPushNotificationConfigs"
    assert v03["SendMessage"].request is v03pb.SendMessageRequest
    assert v10["SendMessage"].request is pb.SendMessageRequest
    with pytest.raises(A2AError) as info:
        wire.wire_method(ops.BY_NAME[ops.LIST_TASKS], V03)
    assert info.value.kind.name == "UnsupportedOperationError"


def test_garbage_request_bytes_are_invalid_request() -> None:
    with pytest.raises(A2AError) as info:
        wire.GRPC_V10.decode_request(wire.wire_methods(V10)["GetTask"], b"\xff\xff", LossReport())
    assert info.value.kind.name == "InvalidRequestError"


def test_v10_status_carries_error_info() -> None:
    status = error_to_grpc_v10(a2a_error("TaskNotFoundError", "Task not found", taskId="t9"))
    assert status.code == "NOT_FOUND" and status.message == "Task not found"
    assert status.details is not None
    proto = status_pb2.Status.FromString(status.details)
    assert proto.code == 5 and proto.message == "Task not found"
    info = error_details_pb2.ErrorInfo()
    assert proto.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "TASK_NOT_FOUND", "a2a-protocol.org", {"taskId": "t9"})


@pytest.mark.parametrize(("name", "v10_code", "v03_code", "v03_message"), [
    ("TaskNotFoundError", "NOT_FOUND", "NOT_FOUND", "TaskNotFoundError: m"),
    ("TaskNotCancelableError", "FAILED_PRECONDITION", "UNIMPLEMENTED",
     "TaskNotCancelableError: m"),
    ("ExtendedAgentCardNotConfiguredError", "FAILED_PRECONDITION", "UNKNOWN",
     "AuthenticatedExtendedCardNotConfiguredError: m"),
    ("BackendUnavailableError", "UNAVAILABLE", "UNAVAILABLE", "BackendUnavailableError: m"),
])
def test_status_tables(name: str, v10_code: str, v03_code: str, v03_message: str) -> None:
    err = a2a_error(name, "m")
    assert error_to_grpc(err, V10).code == v10_code
    v03 = error_to_grpc_v03(err)
    assert (v03.code, v03.message, v03.details) == (v03_code, v03_message, None)


@pytest.mark.parametrize("kind", ERROR_KINDS, ids=[k.reason for k in ERROR_KINDS])
def test_every_error_survives_both_dialects(kind: object) -> None:
    err = A2AError(kind, "boom", {"k": "v"})  # type: ignore[arg-type]
    v10 = error_to_grpc_v10(err)
    back = error_from_grpc(v10.code, v10.message, v10.details)
    assert (back.kind, back.message, back.metadata) == (err.kind, "boom", {"k": "v"})
    v03 = error_to_grpc_v03(err)
    back = error_from_grpc(v03.code, v03.message, v03.details)
    assert (back.kind, back.message) == (err.kind, "boom")


@pytest.mark.parametrize(("code", "expected"), [
    ("NOT_FOUND", "TaskNotFoundError"), ("UNIMPLEMENTED", "UnsupportedOperationError"),
    ("INVALID_ARGUMENT", "InvalidParamsError"), ("UNAVAILABLE", "BackendUnavailableError"),
    ("DEADLINE_EXCEEDED", "BackendTimeoutError"), ("FAILED_PRECONDITION", "InternalError"),
    ("PERMISSION_DENIED", "InternalError"),
])
def test_status_only_errors_fall_back_to_the_code(code: str, expected: str) -> None:
    err = error_from_grpc(code, "something: went wrong", None)
    assert err.kind.name == expected
    if expected == "InternalError":
        assert err.message == f"backend answered gRPC {code}: something: went wrong"


def test_grpc_backend_url_forms_and_listener() -> None:
    for url in ("grpc://127.0.0.1:50051", "http://127.0.0.1:50051/", "127.0.0.1:50051"):
        config = parse_config({"tenants": {"t": {"backend": {
            "url": url, "version": "1.0", "binding": "GRPC"}}},
            "listen": {"grpc": "127.0.0.1:50052"}})
        assert config.tenants["t"].backend.url == "127.0.0.1:50051"
        assert config.listen.grpc == "127.0.0.1:50052"
    with pytest.raises(ConfigError, match=r"listen\.grpc"):
        parse_config({"tenants": {"t": {"backend": {"url": "http://a/", "version": "0.3"}}},
                      "listen": {"grpc": "50051"}})
    with pytest.raises(ConfigError):
        parse_config({"tenants": {"t": {"backend": {
            "url": "127.0.0.1:50051", "version": "1.0", "binding": "JSONRPC"}}}})
