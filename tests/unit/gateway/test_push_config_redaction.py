"""Push-config answers never hand credentials to a caller who did not set them
(translators.webhooks.shown_config, applied by the push relay's leave hook), whatever
the backend echoes; checked on the canonical answer and on what each of the six
dialects writes from it."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call, CallContext, ClientFacts, Principal
from gateway.config.models import parse_config
from gateway.relay.hooks import PushRelay
from translators import operations as ops
from translators.dialects import DIALECTS
from translators.loss import LossReport
from translators.webhooks import RelayTarget

ALICE = Principal("alice", "api_key")
BOB = Principal("bob", "api_key")
SECRETS = (b"client-tok", b"client-cred", b"backend-echo")


def relay() -> PushRelay:
    config = parse_config({"tenants": {"t": {"backend": {
        "url": "http://127.0.0.1:1/", "version": "0.3"}}}})
    return PushRelay(config, cast(Any, None), environ={})


def call(op: str, principal: Principal | None, client: str = "1.0",
         request: ProtoMessage | None = None) -> Call:
    ctx = CallContext(ClientFacts("JSONRPC"), client, tenant="t", principal=principal)
    ctx.outcome.backend_version = "0.3"
    return Call(ops.BY_NAME[op], request or pb.GetTaskPushNotificationConfigRequest(), ctx)


def relayed(r: PushRelay, owner: Principal | None) -> pb.TaskPushNotificationConfig:
    """What the backend holds for a relayed config Alice (or nobody) set, echoing the
    relay's token and credentials as a backend does."""
    target = RelayTarget(
        url="https://hooks.example/secret-path", client_version="1.0",
        backend_version="0.3", tenant="t", relay_token="backend-echo",
        issued_at=int(time.time()), token="client-tok",
        authentication=("Bearer", "client-cred"), config_id="c1", task_id="t1",
        owner=owner.key if owner else "")
    return pb.TaskPushNotificationConfig(
        task_id="t1", id="c1", url=r.base + r.sealer.seal(target), token="backend-echo",
        authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="backend-echo"))


def direct() -> pb.TaskPushNotificationConfig:
    """A config the backend holds itself (not relayed), echoing its credentials."""
    return pb.TaskPushNotificationConfig(
        task_id="t1", id="c2", url="https://hooks.example/direct", token="backend-echo",
        authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="backend-echo"))


def listed(*configs: pb.TaskPushNotificationConfig) -> pb.ListTaskPushNotificationConfigsResponse:
    return pb.ListTaskPushNotificationConfigsResponse(configs=configs)


def written(op: str, answer: ProtoMessage) -> dict[str, bytes]:
    """What each dialect writes for this answer."""
    return {f"{binding} {version}": d.client(ops.BY_NAME[op], 1).answer(answer, LossReport())
            for (binding, version), d in DIALECTS.items()}


def test_the_owner_gets_its_own_config_back() -> None:
    r = relay()
    answer = r.restore_response(call(ops.PUSH_GET, ALICE), relayed(r, ALICE))
    assert isinstance(answer, pb.TaskPushNotificationConfig)
    assert (answer.url, answer.token, answer.authentication.credentials) == (
        "https://hooks.example/secret-path", "client-tok", "client-cred")


@pytest.mark.parametrize("caller", [BOB, None], ids=["another principal", "anonymous"])
def test_anyone_else_sees_no_credentials_in_any_dialect(caller: Principal | None) -> None:
    r = relay()
    for op, answer in [(ops.PUSH_GET, relayed(r, ALICE)),
                       (ops.PUSH_LIST, listed(relayed(r, ALICE), direct()))]:
        shown = r.restore_response(call(op, caller), answer)
        assert shown is not None
        configs = list(shown.configs) if isinstance(
            shown, pb.ListTaskPushNotificationConfigsResponse) else [shown]
        for cfg in configs:
            assert cfg.token == "" and cfg.authentication.credentials == ""
            assert cfg.authentication.scheme == "Bearer"  # the scheme is no secret
        # Alice's webhook URL stays sealed: the opaque relay URL.
        assert configs[0].url.startswith(r.base) and configs[0].id == "c1"
        for dialect, body in written(op, shown).items():
            assert not any(s in body for s in SECRETS), dialect
            assert b"secret-path" not in body and b"c1" in body, dialect


def test_a_direct_config_never_echoes_the_backends_credentials() -> None:
    r = relay()
    for caller in (ALICE, None):
        shown = r.restore_response(call(ops.PUSH_LIST, caller), listed(direct()))
        assert isinstance(shown, pb.ListTaskPushNotificationConfigsResponse)
        for dialect, body in written(ops.PUSH_LIST, shown).items():
            assert b"backend-echo" not in body and b"hooks.example/direct" in body, dialect


def test_a_create_not_relayed_answers_what_its_caller_sent() -> None:
    r = relay()
    sent = pb.TaskPushNotificationConfig(
        task_id="t1", id="c2", url="https://hooks.example/direct", token="mine",
        authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="my-cred"))
    create = call(ops.PUSH_CREATE, ALICE, client="0.3", request=sent)  # 0.3 → 0.3
    shown = r.restore_response(create, direct())
    assert isinstance(shown, pb.TaskPushNotificationConfig)
    assert (shown.token, shown.authentication.credentials) == ("mine", "my-cred")


def test_a_seal_of_another_tenant_or_task_stays_sealed_without_credentials() -> None:
    r = relay()
    cfg = relayed(r, ALICE)
    cfg.task_id = "other-task"
    shown = r.restore_response(call(ops.PUSH_GET, ALICE), cfg)
    assert isinstance(shown, pb.TaskPushNotificationConfig)
    assert shown.url.startswith(r.base) and shown.token == ""
    assert shown.authentication.credentials == ""
