"""Error tables and classification (reference §7), A2A-Version negotiation (§1)."""

from __future__ import annotations

import re

import pytest

from translators import errors as e
from translators.errors import A2AError, error_from_jsonrpc
from translators.versions import (
    V03,
    V10,
    VersionRules,
    negotiate,
    normalize_version,
)

# name: (JSON-RPC code, gRPC v1.0.1, HTTP v1.0.1, reason, domain)
# §7.1 (the nine A2A errors), §7.2 py@HEAD column (standard errors), gateway's own.
EXPECTED = {
    "TaskNotFoundError": (-32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"),
    "TaskNotCancelableError": (-32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"),
    "PushNotificationNotSupportedError": (-32003, "FAILED_PRECONDITION", 400,
                                          "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    "UnsupportedOperationError": (-32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"),
    "ContentTypeNotSupportedError": (-32005, "INVALID_ARGUMENT", 400,
                                     "CONTENT_TYPE_NOT_SUPPORTED"),
    "InvalidAgentResponseError": (-32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"),
    "ExtendedAgentCardNotConfiguredError": (-32007, "FAILED_PRECONDITION", 400,
                                            "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    "ExtensionSupportRequiredError": (-32008, "FAILED_PRECONDITION", 400,
                                      "EXTENSION_SUPPORT_REQUIRED"),
    "VersionNotSupportedError": (-32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"),
    "JSONParseError": (-32700, "INVALID_ARGUMENT", 400, "PARSE_ERROR"),
    "InvalidRequestError": (-32600, "INVALID_ARGUMENT", 400, "INVALID_REQUEST"),
    "MethodNotFoundError": (-32601, "NOT_FOUND", 404, "METHOD_NOT_FOUND"),
    "InvalidParamsError": (-32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
    "InternalError": (-32603, "INTERNAL", 500, "INTERNAL_ERROR"),
    "BackendUnavailableError": (-32603, "UNAVAILABLE", 502, "BACKEND_UNAVAILABLE"),
    "BackendTimeoutError": (-32603, "DEADLINE_EXCEEDED", 504, "BACKEND_TIMEOUT"),
    "ResourceExhaustedError": (-32603, "RESOURCE_EXHAUSTED", 429, "RESOURCE_EXHAUSTED"),
    "StoreUnavailableError": (-32603, "UNAVAILABLE", 503, "STORE_UNAVAILABLE"),
    "PayloadTooLargeError": (-32600, "RESOURCE_EXHAUSTED", 413, "PAYLOAD_TOO_LARGE"),
    "RequestTimeoutError": (-32600, "DEADLINE_EXCEEDED", 408, "REQUEST_TIMEOUT"),
    "TenantNotFoundError": (-32602, "NOT_FOUND", 404, "TENANT_NOT_FOUND"),
    "MethodNotAllowedError": (-32601, "UNIMPLEMENTED", 405, "METHOD_NOT_ALLOWED"),
    "UnauthenticatedError": (-32000, "UNAUTHENTICATED", 401, "UNAUTHENTICATED"),
    "PermissionDeniedError": (-32000, "PERMISSION_DENIED", 403, "PERMISSION_DENIED"),
}
A2A_ERRORS = list(EXPECTED)[:9]
GATEWAY_ERRORS = ["BackendUnavailableError", "BackendTimeoutError", "ResourceExhaustedError",
                  "PayloadTooLargeError", "RequestTimeoutError", "TenantNotFoundError",
                  "UnauthenticatedError", "PermissionDeniedError", "MethodNotAllowedError",
                  "StoreUnavailableError"]

# §7.3: what real v0.3 peers used outside JSON-RPC (py@v0.3.26), plus §7.2's last column.
EXPECTED_V03 = {
    "TaskNotFoundError": (404, "NOT_FOUND", None),
    "TaskNotCancelableError": (409, "UNIMPLEMENTED", None),
    "PushNotificationNotSupportedError": (501, "UNIMPLEMENTED", None),
    "UnsupportedOperationError": (501, "UNIMPLEMENTED", None),
    "ContentTypeNotSupportedError": (415, "UNIMPLEMENTED", None),
    "InvalidAgentResponseError": (502, "INTERNAL", None),
    "ExtendedAgentCardNotConfiguredError": (404, "UNKNOWN",
                                            "AuthenticatedExtendedCardNotConfiguredError"),
    "JSONParseError": (400, "INTERNAL", None),
    "InvalidRequestError": (400, "INVALID_ARGUMENT", None),
    "MethodNotFoundError": (404, "NOT_FOUND", None),
    "InvalidParamsError": (422, "INVALID_ARGUMENT", None),
    "InternalError": (500, "INTERNAL", None),
}


def upper_snake_without_error(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).upper()


def test_every_kind_is_in_the_table() -> None:
    assert sorted(k.name for k in e.ERROR_KINDS) == sorted(EXPECTED)


@pytest.mark.parametrize("kind", e.ERROR_KINDS, ids=lambda k: k.name)
def test_error_table_row(kind: e.ErrorKind) -> None:
    assert (kind.code, kind.grpc, kind.http, kind.reason) == EXPECTED[kind.name]
    assert kind.domain == (e.GATEWAY_DOMAIN if kind.name in GATEWAY_ERRORS else e.A2A_DOMAIN)
    assert e.BY_NAME[kind.name] is kind
    assert e.BY_REASON[kind.reason] is kind
    if kind.name in EXPECTED_V03:
        assert (kind.v03_http, kind.v03_grpc, kind.v03_name) == EXPECTED_V03[kind.name]


@pytest.mark.parametrize("name", A2A_ERRORS + GATEWAY_ERRORS)
def test_reason_rule(name: str) -> None:
    # §7.1: UPPER_SNAKE_CASE of the error name without `Error`.
    assert e.BY_NAME[name].reason == upper_snake_without_error(name)


def test_codes_resolve_to_the_a2a_or_standard_error() -> None:
    for name, (code, *_rest) in EXPECTED.items():
        if name not in GATEWAY_ERRORS:
            assert e.BY_CODE[code].name == name
    # -32603 without ErrorInfo is a plain InternalError, never one of the gateway's own.
    assert e.BY_CODE[-32603].name == "InternalError"
    # The v0.3 name of -32007 is an alias.
    assert e.BY_NAME["AuthenticatedExtendedCardNotConfiguredError"].code == -32007


def test_error_info_shape() -> None:
    err = e.a2a_error("TaskNotFoundError", taskId="t9", n=3)
    assert err.message == "Task not found"
    assert err.error_info() == {"@type": e.ERROR_INFO_TYPE, "reason": "TASK_NOT_FOUND",
                                "domain": "a2a-protocol.org",
                                "metadata": {"taskId": "t9", "n": "3"}}
    assert "metadata" not in e.a2a_error("InternalError").error_info()


def test_v03_envelope_carries_gateway_reason() -> None:
    err = e.a2a_error("BackendTimeoutError", backend="b1")
    assert e.error_to_jsonrpc_v03(err) == {
        "code": -32603, "message": "Backend agent timed out",
        "data": {"backend": "b1", "reason": "BACKEND_TIMEOUT"}}
    assert e.error_to_jsonrpc_v10(err)["data"] == [
        {"@type": e.ERROR_INFO_TYPE, "reason": "BACKEND_TIMEOUT", "domain": "a2a-gateway",
         "metadata": {"backend": "b1"}}]
    assert error_from_jsonrpc(e.error_to_jsonrpc_v10(err)).name == "BackendTimeoutError"


# ---------------------------------------------------------------- error_from_jsonrpc


def _info(reason: str, domain: str = e.A2A_DOMAIN, **metadata: str) -> dict[str, object]:
    info: dict[str, object] = {"@type": e.ERROR_INFO_TYPE, "reason": reason, "domain": domain}
    if metadata:
        info["metadata"] = metadata
    return info


@pytest.mark.parametrize("kind", e.ERROR_KINDS, ids=lambda k: k.name)
def test_reason_wins_over_code(kind: e.ErrorKind) -> None:
    # Every reason, under a code that names something else.
    other = -32001 if kind.code != -32001 else -32002
    err = error_from_jsonrpc({"code": other, "message": "m",
                              "data": [_info(kind.reason, kind.domain, k="v")]})
    assert err.kind is kind
    assert (err.message, err.metadata) == ("m", {"k": "v"})


def test_reason_without_domain_and_non_info_entries() -> None:
    info = _info("TASK_NOT_CANCELABLE")
    del info["domain"]
    err = error_from_jsonrpc({"code": -32603, "message": "m", "data": ["junk", 3, info]})
    assert err.name == "TaskNotCancelableError"
    # A py@HEAD parse error carries INVALID_REQUEST (§7.2).
    err = error_from_jsonrpc({"code": -32700, "message": "m", "data": [_info("INVALID_REQUEST")]})
    assert err.name == "InvalidRequestError"


def test_unknown_reason_falls_back_to_code() -> None:
    err = error_from_jsonrpc({"code": -32004, "message": "m", "data": [_info("SOMETHING_NEW")]})
    assert err.name == "UnsupportedOperationError"


@pytest.mark.parametrize("kind", [k for k in e.ERROR_KINDS if k.name not in GATEWAY_ERRORS],
                         ids=lambda k: k.name)
def test_code_without_error_info(kind: e.ErrorKind) -> None:
    err = error_from_jsonrpc({"code": kind.code, "message": "m"})
    assert (err.kind, err.message, err.metadata) == (kind, "m", {})


def test_v03_data_object_becomes_metadata() -> None:
    err = error_from_jsonrpc({"code": -32001, "message": "m", "data": {"taskId": "t", "n": 1}})
    assert err.metadata == {"taskId": "t", "n": "1"}


def test_missing_message_uses_empty_then_default() -> None:
    err = error_from_jsonrpc({"code": -32001})
    assert err.message == "Task not found"
    err = error_from_jsonrpc({"code": -32001, "message": 42})
    assert err.message == "Task not found"


@pytest.mark.parametrize(("body", "message"), [
    ({"code": -32050, "message": "boom"}, "backend error -32050: boom"),
    ({"code": 12}, "backend error 12"),
])
def test_unknown_code_is_internal_error_naming_the_code(body: dict[str, object],
                                                        message: str) -> None:
    err = error_from_jsonrpc(body)
    assert err.name == "InternalError"
    assert err.message == message


@pytest.mark.parametrize("body", [None, "oops", 3, ["a"], {}, {"message": "no code"},
                                  {"code": "-32001", "message": "m"}, {"code": None},
                                  {"code": True, "message": "m"}])
def test_malformed_error_is_invalid_agent_response(body: object) -> None:
    err = error_from_jsonrpc(body)
    assert err.name == "InvalidAgentResponseError"
    assert isinstance(err, A2AError)


# ---------------------------------------------------------------- versions


@pytest.mark.parametrize(("raw", "version"), [
    (None, V03), ("", V03), ("  ", V03),  # absent or empty means 0.3 (spec §3.6.2)
    ("0.3", V03), ("0.3.0", V03), ("1.0", V10), ("1.0.1", V10), (" 1.0 ", V10),
    ("01.00", V10), ("9.9", "9.9"), ("0.5", "0.5"), ("abc", "abc"),
])
def test_normalize_version(raw: str | None, version: str) -> None:
    assert normalize_version(raw) == version


@pytest.mark.parametrize(("header", "payload", "served"), [
    (None, V03, V03),
    ("", V03, V03),
    ("0.3", V03, V03),
    ("1.0", V10, V10),
    ("1.0.1", V10, V10),  # patch numbers are ignored
    (None, V10, V10),  # lenient: a v1.0 method without a header is served (§1 "Inbound")
])
def test_negotiate_lenient(header: str | None, payload: str, served: str) -> None:
    assert negotiate(header, payload, VersionRules()) == served


@pytest.mark.parametrize("header", ["9.9", "0.5", "2.0", "1.1", "x"])
@pytest.mark.parametrize("strict", [False, True])
def test_negotiate_unsupported_header(header: str, strict: bool) -> None:
    with pytest.raises(A2AError) as exc:
        negotiate(header, V10, VersionRules(strict=strict))
    err = exc.value
    assert err.name == "VersionNotSupportedError"
    assert err.kind.code == -32009
    assert err.message == f"Protocol version {header} is not supported. Supported: 1.0, 0.3"
    assert err.metadata == {"requested": header, "supported": "1.0,0.3"}


def test_unsupported_message_examples() -> None:
    for header in ("9.9", "0.5"):
        with pytest.raises(A2AError) as exc:
            negotiate(header, V03, VersionRules())
        assert str(exc.value) == (
            f"Protocol version {header} is not supported. Supported: 1.0, 0.3")


@pytest.mark.parametrize(("header", "payload"), [(None, V10), ("", V10), ("0.3", V10),
                                                 ("1.0", V03)])
def test_negotiate_strict_rejects_mismatch(header: str | None, payload: str) -> None:
    # Strict: spec §3.6.2 literally, like py@HEAD: missing = 0.3, so v1.0 methods need 1.0.
    with pytest.raises(A2AError) as exc:
        negotiate(header, payload, VersionRules(strict=True))
    assert exc.value.name == "VersionNotSupportedError"
    assert exc.value.message.startswith(f"Protocol version {normalize_version(header)} ")
    assert exc.value.message.endswith(f"Supported: {payload}")


@pytest.mark.parametrize(("header", "payload"), [(None, V03), ("0.3", V03), ("1.0", V10),
                                                 ("1.0.2", V10)])
def test_negotiate_strict_accepts_match(header: str | None, payload: str) -> None:
    assert negotiate(header, payload, VersionRules(strict=True)) == payload


def test_only_configured_versions_are_served() -> None:
    only10 = VersionRules(supported=(V10,))
    assert negotiate("1.0", V10, only10) == V10
    with pytest.raises(A2AError) as exc:
        negotiate(None, V10, only10)  # absent header = 0.3, which is not served
    assert exc.value.message == "Protocol version 0.3 is not supported. Supported: 1.0"
    with pytest.raises(A2AError):
        negotiate("1.0", V03, only10)  # a v0.3 method on a v1.0-only gateway


@pytest.mark.parametrize(("status", "body", "name"), [
    # a2a-sdk 0.3.26's REST app has no DELETE push-config route: the peer does not serve
    # the operation, which is not a fault of the client's request.
    (405, {"detail": "Method Not Allowed"}, "UnsupportedOperationError"),
    (501, {"message": "x"}, "UnsupportedOperationError"),
    (500, {"message": "unknown exception"}, "InternalError"),
    (418, None, "InvalidRequestError"),
])
def test_rest_status_without_error_info(status: int, body: object, name: str) -> None:
    from translators.rest_errors import error_from_rest

    err = error_from_rest(status, body)
    assert err.name == name
    if status in (405, 418):
        assert err.message.startswith(f"backend answered HTTP {status}")
