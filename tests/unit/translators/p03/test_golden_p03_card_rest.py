"""Golden pairs from the wire reference (/work/shared/a2a-wire-reference.md), P03 ⇄ P10:
the agent card (§4.5) and the v0.3 REST bodies (§2). The objects and requests are in
test_golden_p03.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from tests.support.golden_support import CARD_P03, CARD_P10, norm03
from tests.unit.translators.p03.test_golden_p03 import CREATE_P03, CREATE_P10, SEND_P03, SEND_P10
from translators import operations as ops
from translators.errors import A2AError
from translators.loss import LossReport
from translators.p03 import card, requests
from translators.p03 import rest as p03_rest
from translators.p03.json import (
    dump_p03,
    parse_p03,
)
from translators.protojson import dump_p10, parse_p10
from translators.rest_routes import route_for
from translators.versions import V03

JSON = dict[str, Any]


# ====================================================================== §4.5 agent card



def test_card_pair() -> None:
    loss = LossReport()
    out = requests.response_to_p10(ops.EXTENDED_CARD, parse_p03(CARD_P03, v03.AgentCard), loss)
    assert out is not None and dump_p10(out) == CARD_P10
    back = requests.response_to_p03(ops.EXTENDED_CARD, parse_p10(CARD_P10, pb.AgentCard), loss)
    assert back is not None and dump_p03(back) == CARD_P03
    assert not loss


def test_card_device_code_pkce_and_tenant_are_lossy() -> None:
    p10 = copy.deepcopy(CARD_P10)
    p10["securitySchemes"]["dev"] = {"oauth2SecurityScheme": {"flows": {"deviceCode": {
        "deviceAuthorizationUrl": "https://d", "tokenUrl": "https://t"}}}}
    p10["securitySchemes"]["code"] = {"oauth2SecurityScheme": {"flows": {"authorizationCode": {
        "authorizationUrl": "https://a", "tokenUrl": "https://t", "pkceRequired": True,
        "scopes": {"r": "read"}}}}}
    p10["supportedInterfaces"].append({"url": "https://g.example/t/", "protocolBinding": "GRPC",
                                       "protocolVersion": "1.0", "tenant": "t"})
    loss = LossReport()
    out = card.card_to_p03(parse_p10(p10, pb.AgentCard), loss)
    assert sorted(loss.request) == sorted([
        "securitySchemes.dev.oauth2SecurityScheme.flows.deviceCode",
        "securitySchemes.code.oauth2SecurityScheme.flows.authorizationCode.pkceRequired",
        "supportedInterfaces[2].tenant", "supportedInterfaces[2].protocolVersion"])
    assert dump_p03(out)["securitySchemes"]["code"] == {"oauth2SecurityScheme": {"flows": {
        "authorizationCode": {"authorizationUrl": "https://a", "tokenUrl": "https://t",
                              "scopes": {"r": "read"}}}}}
    # Only the v0.3 interfaces, as the gateway's own card would list them.
    only03 = card.card_to_p03(parse_p10(p10, pb.AgentCard), LossReport(), versions=("0.3",))
    assert len(only03.additional_interfaces) == 2


# ====================================================================== v0.3 REST bodies (§2)


def test_rest_send_body_and_answer() -> None:
    route = route_for(ops.SEND, V03)
    loss = LossReport()
    req = p03_rest.request_to_canonical(route, {}, copy.deepcopy(SEND_P03), loss)
    assert dump_p10(req) == SEND_P10
    assert p03_rest.body_from_canonical(route, req, loss) == norm03(SEND_P03,
                                                                   v03.SendMessageRequest)
    answer = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}
    result = p03_rest.result_to_canonical(ops.BY_NAME[ops.SEND], answer, loss)
    assert result is not None and p03_rest.result_from_canonical(
        ops.BY_NAME[ops.SEND], result, loss) == answer
    assert not loss


def test_rest_paths_name_the_resources() -> None:
    loss = LossReport()
    get = p03_rest.request_to_canonical(route_for(ops.GET_TASK, V03), {"id": "t1"},
                                        {"historyLength": 2}, loss)
    assert get == pb.GetTaskRequest(id="t1", history_length=2)
    # py@v0.3.26 sends {"name": "tasks/{id}"} as the cancel body; the path wins.
    cancel = p03_rest.request_to_canonical(route_for(ops.CANCEL, V03), {"id": "t1"},
                                           {"name": "tasks/zz"}, loss)
    assert cancel == pb.CancelTaskRequest(id="t1")
    assert p03_rest.body_from_canonical(route_for(ops.CANCEL, V03), cancel, loss) == {
        "name": "tasks/t1"}
    delete = p03_rest.request_to_canonical(route_for(ops.PUSH_DELETE, V03),
                                           {"taskId": "t1", "id": "c1"}, {}, loss)
    assert delete == pb.DeleteTaskPushNotificationConfigRequest(task_id="t1", id="c1")
    assert p03_rest.body_from_canonical(route_for(ops.PUSH_DELETE, V03), delete, loss) is None
    assert p03_rest.result_from_canonical(ops.BY_NAME[ops.PUSH_DELETE], None, loss) == {}
    # Both create bodies, and the SDK shape toward backends.
    create = route_for(ops.PUSH_CREATE, V03)
    for body in (CREATE_P03, CREATE_P03["config"]):
        req = p03_rest.request_to_canonical(create, {"taskId": "t1"}, copy.deepcopy(body), loss)
        assert dump_p10(req) == CREATE_P10
        assert p03_rest.body_from_canonical(create, req, loss) == CREATE_P03
    assert not loss


def test_rest_card_is_j03_out_and_either_shape_in() -> None:
    # §4.1: py@v0.3 REST servers answer /v1/card in J03; py@HEAD's v0.3 client reads P03.
    op = ops.BY_NAME[ops.EXTENDED_CARD]
    loss = LossReport()
    from_p03 = p03_rest.result_to_canonical(op, copy.deepcopy(CARD_P03), loss)
    assert from_p03 is not None and dump_p10(from_p03) == CARD_P10
    j03 = p03_rest.result_from_canonical(op, parse_p10(CARD_P10, pb.AgentCard), loss)
    assert j03["security"] == [{"google": ["openid"]}]
    assert j03["securitySchemes"]["google"]["type"] == "openIdConnect"
    from_j03 = p03_rest.result_to_canonical(op, j03, loss)
    assert from_j03 is not None and dump_p10(from_j03) == CARD_P10
    assert not loss


def test_rest_stream_event_is_a_bare_p03_stream_response() -> None:
    item = parse_p10({"statusUpdate": {"taskId": "t1", "contextId": "c1",
                                       "status": {"state": "TASK_STATE_CANCELED"}}},
                     pb.StreamResponse)
    assert p03_rest.stream_item_from_canonical(item, True, LossReport()) == {"statusUpdate": {
        "taskId": "t1", "contextId": "c1", "final": True,
        "status": {"state": "TASK_STATE_CANCELLED"}}}


def test_rest_bad_answers_are_the_backends_fault() -> None:
    with pytest.raises(A2AError) as info:
        p03_rest.result_to_canonical(ops.BY_NAME[ops.GET_TASK], {"history": "x"}, LossReport())
    assert info.value.name == "InvalidAgentResponseError"
