"""Golden pairs from the wire reference (/work/shared/a2a-wire-reference.md), J03 ⇄ P10:
push configs (§3.9), errors (§7.4) and the agent card (§4.5). Parts, messages, tasks,
SendMessage and results are in test_golden_j03.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from tests.support.golden_support import (
    CARD_J03,
    CARD_P10,
    EXTENDED_CARD,
    JSON,
    PUSH_CREATE,
    PUSH_DELETE,
    PUSH_GET,
    PUSH_LIST,
    through_proto,
)
from translators import operations as ops
from translators.dialects import jsonrpc as rpc
from translators.errors import A2AError, error_from_jsonrpc
from translators.j03 import cards
from translators.j03 import requests as r
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10
from translators.versions import V03, V10

RPC = {V03: rpc.JSONRPC_V03, V10: rpc.JSONRPC_V10}

# ====================================================================== §3.9 push configs

PUSH_SET_J03: JSON = {"taskId": "t1", "pushNotificationConfig": {
    "id": "c1", "url": "https://cb/x", "token": "tok",
    "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}
PUSH_CREATE_P10: JSON = {"taskId": "t1", "id": "c1", "url": "https://cb/x", "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "s"}}


def test_push_create_params_both_ways() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(PUSH_CREATE, copy.deepcopy(PUSH_SET_J03), loss)
    assert isinstance(req, pb.TaskPushNotificationConfig)
    assert dump_p10(req) == PUSH_CREATE_P10
    req = RPC[V10].decode_params(PUSH_CREATE, copy.deepcopy(PUSH_CREATE_P10), loss)
    assert RPC[V03].encode_params(PUSH_CREATE, req, loss) == PUSH_SET_J03
    assert not loss


def test_push_create_result_both_ways() -> None:
    loss = LossReport()
    res = RPC[V03].decode_result(PUSH_CREATE, copy.deepcopy(PUSH_SET_J03), loss, PUSH_CREATE.request())
    assert dump_p10(res) == PUSH_CREATE_P10
    assert RPC[V03].encode_result(PUSH_CREATE, res, loss) == PUSH_SET_J03
    assert not loss


def test_push_auth_several_schemes_keeps_the_first() -> None:
    loss = LossReport()
    params = copy.deepcopy(PUSH_SET_J03)
    params["pushNotificationConfig"]["authentication"]["schemes"] = ["Bearer", "Basic"]
    req = RPC[V03].decode_params(PUSH_CREATE, params, loss)
    assert dump_p10(req) == PUSH_CREATE_P10
    assert loss.request == ["params.pushNotificationConfig.authentication.schemes[1:]"]


@pytest.mark.parametrize(("j03", "p10", "dropped"), [
    ({"id": "t1", "pushNotificationConfigId": "c1"}, {"taskId": "t1", "id": "c1"}, []),
    # Deprecated form without a config id: the SDKs' default config id is the task id.
    ({"id": "t1"}, {"taskId": "t1", "id": "t1"}, []),
    ({"id": "t1", "pushNotificationConfigId": "c1", "metadata": {"a": 1}},
     {"taskId": "t1", "id": "c1"}, ["params.metadata"]),
])
def test_push_get_params_to_p10(j03: dict[str, Any], p10: dict[str, Any],
                                dropped: list[str]) -> None:
    loss = LossReport()
    assert dump_p10(RPC[V03].decode_params(PUSH_GET, j03, loss)) == p10
    assert loss.request == dropped


def test_push_get_and_delete_params_to_j03() -> None:
    # v0.3 `id` is the task id; v1.0 `id` is the config id.
    for op in (PUSH_GET, PUSH_DELETE):
        req = RPC[V10].decode_params(op, {"taskId": "t1", "id": "c1"}, LossReport())
        assert RPC[V03].encode_params(op, req, LossReport()) == {
            "id": "t1", "pushNotificationConfigId": "c1"}


def test_push_delete_params_to_p10() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(PUSH_DELETE, {"id": "t1", "pushNotificationConfigId": "c1", "metadata": {"a": 1}}, loss)
    assert dump_p10(req) == {"taskId": "t1", "id": "c1"}
    assert loss.request == ["params.metadata"]
    with pytest.raises(A2AError) as exc:  # required in v0.3 delete
        RPC[V03].decode_params(PUSH_DELETE, {"id": "t1"}, LossReport())
    assert exc.value.name == "InvalidParamsError"


def test_push_delete_result() -> None:
    # v0.3 `result: null`; v1.0 Empty (py: null). Nothing to translate.
    assert RPC[V03].decode_result(PUSH_DELETE, None, LossReport(), PUSH_DELETE.request()) is None
    assert RPC[V03].encode_result(PUSH_DELETE, None, LossReport()) is None


def test_push_list_params_both_ways() -> None:
    loss = LossReport()
    req = RPC[V03].decode_params(PUSH_LIST, {"id": "t1", "metadata": {"a": 1}}, loss)
    assert dump_p10(req) == {"taskId": "t1"}
    assert loss.request == ["params.metadata"]
    loss = LossReport()
    req = RPC[V10].decode_params(PUSH_LIST, {"taskId": "t1", "pageSize": 5, "pageToken": "p"}, loss)
    assert RPC[V03].encode_params(PUSH_LIST, req, loss) == {"id": "t1"}
    assert loss.request == ["params.pageSize", "params.pageToken"]


def test_push_list_result_both_ways() -> None:
    # v0.3: a bare array of TaskPushNotificationConfig; v1.0: {"configs": [...]}.
    loss = LossReport()
    res = RPC[V03].decode_result(PUSH_LIST, [copy.deepcopy(PUSH_SET_J03)], loss, PUSH_LIST.request())
    assert dump_p10(res) == {"configs": [PUSH_CREATE_P10]}
    assert RPC[V03].encode_result(PUSH_LIST, res, loss) == [PUSH_SET_J03]
    assert not loss
    res = parse_p10({"configs": [PUSH_CREATE_P10], "nextPageToken": "n"},
                    pb.ListTaskPushNotificationConfigsResponse)
    assert RPC[V03].encode_result(PUSH_LIST, res, loss) == [PUSH_SET_J03]
    assert loss.response == ["result.nextPageToken"]


# ====================================================================== §7.4 errors

ERROR_P10: JSON = {"jsonrpc": "2.0", "id": 2, "error": {
    "code": -32001, "message": "Task not found",
    "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
              "domain": "a2a-protocol.org", "metadata": {"taskId": "t9"}}]}}
ERROR_J03: JSON = {"jsonrpc": "2.0", "id": 2, "error": {
    "code": -32001, "message": "Task not found", "data": {"taskId": "t9"}}}


def test_error_v10_example_both_ways() -> None:
    err = error_from_jsonrpc(ERROR_P10["error"])
    assert (err.name, err.message, err.metadata) == ("TaskNotFoundError", "Task not found",
                                                     {"taskId": "t9"})
    assert RPC[V10].failure(2, err) == ERROR_P10
    # v1.0 → v0.3: keep code and message, flatten ErrorInfo.metadata into `data`.
    assert RPC[V03].failure(2, err) == ERROR_J03


def test_error_v03_to_v10_builds_error_info() -> None:
    err = error_from_jsonrpc(ERROR_J03["error"])
    assert err.name == "TaskNotFoundError"
    assert RPC[V10].failure(2, err) == ERROR_P10
    # v0.3 `data` values are stringified into ErrorInfo.metadata (map<string,string>).
    err = error_from_jsonrpc({"code": -32002, "message": "no", "data": {"n": 1, "s": "x"}})
    assert RPC[V10].failure(3, err)["error"]["data"][0]["metadata"] == {"n": "1", "s": "x"}


def test_error_classified_by_reason_before_code() -> None:
    body = copy.deepcopy(ERROR_P10["error"])
    body["code"] = -32603
    assert error_from_jsonrpc(body).name == "TaskNotFoundError"
    body["data"][0]["reason"] = "VERSION_NOT_SUPPORTED"
    body["code"] = -32001
    assert error_from_jsonrpc(body).name == "VersionNotSupportedError"
    # The gateway's own errors share -32603 and are told apart by reason.
    own = {"code": -32603, "message": "down", "data": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "BACKEND_UNAVAILABLE",
         "domain": "a2a-gateway"}]}
    assert error_from_jsonrpc(own).name == "BackendUnavailableError"
    # A reason from a foreign domain is not ours: the code decides.
    foreign = copy.deepcopy(body)
    foreign["data"][0]["domain"] = "example.com"
    assert error_from_jsonrpc(foreign).name == "TaskNotFoundError"


def test_error_data_passes_through_for_v10_ids() -> None:
    # -32008 and -32009 pass through to v0.3 (server-defined range -32000..-32099).
    for reason, code in (("EXTENSION_SUPPORT_REQUIRED", -32008), ("VERSION_NOT_SUPPORTED", -32009)):
        err = error_from_jsonrpc({"code": code, "message": "m", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
             "domain": "a2a-protocol.org"}]})
        assert RPC[V03].failure(1, err) == {"jsonrpc": "2.0", "id": 1,
                                            "error": {"code": code, "message": "m"}}


# ====================================================================== §4.5 card



def test_card_j03_to_p10() -> None:
    loss = LossReport()
    p10 = cards.card_to_p10(copy.deepcopy(CARD_J03), loss)
    assert p10 == CARD_P10
    # Removed in v1.0 (§4.3): held for a v0.3 reader, lost for any other.
    assert loss.held == {"capabilities.stateTransitionHistory": False}
    assert loss.fields() == ["capabilities.stateTransitionHistory"]
    assert through_proto(p10, pb.AgentCard) == CARD_P10
    # And through the JSON-RPC rules for the extended card.
    loss = LossReport()
    card = RPC[V03].decode_result(EXTENDED_CARD, copy.deepcopy(CARD_J03), loss, EXTENDED_CARD.request())
    assert dump_p10(card) == CARD_P10
    assert loss.fields() == ["capabilities.stateTransitionHistory"]


def test_card_keeps_v03_only_fields_for_a_v03_reader() -> None:
    # A v0.3 backend's card on its way to a v0.3 client loses nothing both can carry.
    loss = LossReport()
    card = RPC[V03].decode_result(EXTENDED_CARD, copy.deepcopy(CARD_J03), loss, EXTENDED_CARD.request())
    back = RPC[V03].encode_result(EXTENDED_CARD, card, loss)
    assert back["capabilities"]["stateTransitionHistory"] is False
    assert not loss


def test_card_p10_to_j03() -> None:
    loss = LossReport()
    expected = copy.deepcopy(CARD_J03)
    del expected["capabilities"]["stateTransitionHistory"]  # v1.0 cannot say it
    assert cards.card_to_j03(copy.deepcopy(CARD_P10), loss) == expected
    card = parse_p10(CARD_P10, pb.AgentCard)
    assert RPC[V03].encode_result(EXTENDED_CARD, card, loss) == expected
    assert not loss


def test_security_requirements_example() -> None:
    # §4.4; an empty scope list serializes as {} or {"list": []}.
    j03 = [{"google": ["openid", "profile"]}, {"apiKey": [], "mtls": []}]
    p10 = [{"schemes": {"google": {"list": ["openid", "profile"]}}},
           {"schemes": {"apiKey": {}, "mtls": {}}}]
    card = {"name": "n", "securityRequirements": cards.security_to_p10(j03)}
    assert through_proto(card, pb.AgentCard)["securityRequirements"] == p10
    assert cards.security_to_j03(p10) == j03


def test_security_scheme_shapes() -> None:
    loss = LossReport()
    assert cards.scheme_to_p10({"type": "apiKey", "in": "header", "name": "X-Key"}, "s", loss) == {
        "apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}
    assert cards.scheme_to_j03({"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}},
                               "s", loss) == {"type": "apiKey", "in": "header", "name": "X-Key"}
    assert cards.scheme_to_p10({"type": "mutualTLS", "description": "d"}, "s", loss) == {
        "mtlsSecurityScheme": {"description": "d"}}
    assert not loss
    # Several OAuth flows: the proto's oneof keeps one, by the stated preference.
    flows = {"implicit": {"authorizationUrl": "https://a", "scopes": {}},
             "clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}
    p10 = cards.scheme_to_p10({"type": "oauth2", "flows": flows}, "securitySchemes.o", loss)
    assert p10 == {"oauth2SecurityScheme": {"flows": {
        "clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}}}
    assert loss.request == ["securitySchemes.o.flows.implicit"]
    # deviceCode has no v0.3 form.
    loss = LossReport()
    j03 = cards.scheme_to_j03({"oauth2SecurityScheme": {"flows": {"deviceCode": {
        "deviceAuthorizationUrl": "https://d", "tokenUrl": "https://t"}}}}, "securitySchemes.o",
        loss)
    assert j03 == {"type": "oauth2", "flows": {}}
    assert loss.request == ["securitySchemes.o.flows.deviceCode"]


def test_card_rules_are_registered_for_every_v03_operation() -> None:
    for op in ops.OPERATIONS:
        assert r.j03_rules(op.name) is not None
