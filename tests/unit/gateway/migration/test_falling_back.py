"""A new conversation whose candidate refuses the connection goes to the primary, with its
push config made again for the primary's version by the push relay (the relay had made it
for the candidate's): gateway/migration/falling_back.py, PushRelay.rewrite_again."""

from __future__ import annotations

from typing import Any, cast

import pytest
from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.backend import BackendConfig
from gateway.config.models import parse_config
from gateway.egress.base import backend_unavailable
from gateway.migration.falling_back import FallingBack
from gateway.relay.hooks import PushRelay
from gateway.relay.seals import sealed_part
from translators import operations as ops
from translators.errors import A2AError
from translators.loss import DECODING, FIRST_ATTEMPT

WEBHOOK = "http://127.0.0.1:9/hook"


class Agent:
    def __init__(self, version: str, refuses: bool = False) -> None:
        self.config = BackendConfig.model_validate({"url": "http://127.0.0.1:1/",
                                                    "version": version})
        self.refuses = refuses
        self.got: list[pb.TaskPushNotificationConfig] = []

    async def unary(self, call: Call) -> Any:
        if self.refuses:
            raise backend_unavailable(call, self.config, "refused", sent=False)
        request: Any = call.request
        self.got.append(request.configuration.task_push_notification_config)
        return pb.SendMessageResponse(task=pb.Task(id="t1", context_id="c1"))


def relay() -> PushRelay:
    config = parse_config({"tenants": {"t": {"backend": {"url": "http://127.0.0.1:1/",
                                                         "version": "0.3"}}},
                           "push_relay": {"webhook_allowlist": ["127.0.0.1"]}})
    return PushRelay(config, cast(Any, None), environ={})


@pytest.mark.parametrize("client", ["0.3", "1.0"])
async def test_the_primary_gets_the_push_config_made_for_its_version(client: str) -> None:
    """A v0.3 primary, a v1.0 candidate. A v0.3 client's config was sealed for the
    candidate's version (relayed); the primary speaks the client's version: it gets the
    client's own webhook. A v1.0 client's config was not relayed (the candidate speaks
    its version); the primary needs the relay: it gets a seal made for v0.3."""
    r, candidate, primary = relay(), Agent("1.0", refuses=True), Agent("0.3")
    request = pb.SendMessageRequest(
        message=pb.Message(message_id="m", role=pb.Role.ROLE_USER, parts=[pb.Part(text="x")]),
        configuration=pb.SendMessageConfiguration(task_push_notification_config=pb.
                                                  TaskPushNotificationConfig(
                                                      url=WEBHOOK, token="tok")))
    call = Call(ops.BY_NAME[ops.SEND], request,
                CallContext(ClientFacts("JSONRPC"), client, tenant="t"))
    call.ctx.outcome.backend_version = "1.0"  # the migration sent it to the candidate
    await r.rewrite_request(call)
    switched: list[bool] = []
    await FallingBack(candidate, primary, lambda: switched.append(True),
                      r.rewrite_again).unary(call)
    assert switched == [True]
    [got] = primary.got
    if client == "0.3":
        assert (got.url, got.token) == (WEBHOOK, "tok")
        return
    sealed = sealed_part(got.url)
    assert sealed is not None and got.url.startswith(r.base), got
    target = r.sealer.open(sealed, check_age=True)
    assert (target.url, target.token, target.client_version, target.backend_version) == (
        WEBHOOK, "tok", "1.0", "0.3")
    assert got.token == target.relay_token and not got.HasField("authentication")


class Streaming:
    """An agent whose connection opens or is refused, as the test says, call by call."""

    def __init__(self, version: str, refusals: list[bool]) -> None:
        self.config = BackendConfig.model_validate({"url": "http://127.0.0.1:1/",
                                                    "version": version})
        self.refusals = refusals
        self.calls: list[str] = []

    def _refused(self, call: Call, what: str) -> None:
        self.calls.append(what)
        if self.refusals.pop(0):
            raise backend_unavailable(call, self.config, "refused", sent=False)

    async def stream(self, call: Call) -> Any:
        self._refused(call, "stream")
        yield [pb.StreamResponse(task=pb.Task(id="t1", context_id="c1"))]

    async def unary(self, call: Call) -> Any:
        self._refused(call, "unary")
        return pb.Task(id="t1", context_id="c1")


def streamed() -> Call:
    return Call(ops.BY_NAME[ops.STREAM], pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="x")])),
        CallContext(ClientFacts("JSONRPC"), "1.0", tenant="t"))


async def test_a_stream_the_candidate_took_is_repaired_at_the_candidate_only() -> None:
    # Its connection broke mid-task: the re-attach and the GetTask that settles the end
    # go to the agent that has the task, refused or not, and fall back no more.
    candidate, primary = Streaming("1.0", [False, True, False]), Streaming("1.0", [])
    switched: list[bool] = []
    backend = FallingBack(cast(Any, candidate), cast(Any, primary),
                          lambda: switched.append(True))
    call = streamed()
    assert [b async for b in backend.stream(call)]
    with pytest.raises(A2AError):  # the candidate refuses the re-attach: an error
        [b async for b in backend.stream(call)]
    assert await backend.unary(call) == pb.Task(id="t1", context_id="c1")
    assert candidate.calls == ["stream", "stream", "unary"]
    assert (primary.calls, switched) == ([], [])


async def test_a_stream_that_fell_back_is_repaired_at_the_primary() -> None:
    candidate, primary = Streaming("1.0", [True]), Streaming("1.0", [False, False, False])
    switched: list[bool] = []
    backend = FallingBack(cast(Any, candidate), cast(Any, primary),
                          lambda: switched.append(True))
    call = streamed()
    assert [b async for b in backend.stream(call)]
    assert [b async for b in backend.stream(call)]  # the re-attach
    assert await backend.unary(call) == pb.Task(id="t1", context_id="c1")
    assert candidate.calls == ["stream"] and primary.calls == ["stream", "stream", "unary"]
    assert switched == [True]  # one fallback, counted once


class _Endless:
    """A stream that goes on until it is closed; says when it is."""

    def __init__(self) -> None:
        self.config = BackendConfig.model_validate({"url": "http://127.0.0.1:1/",
                                                    "version": "1.0"})
        self.closed = False

    def stream(self, call: Call) -> Any:
        async def batches() -> Any:
            try:
                while True:
                    yield [pb.StreamResponse(task=pb.Task(id="t1", context_id="c1"))]
            finally:
                self.closed = True
        return batches()


@pytest.mark.parametrize("refused", [False, True])
async def test_a_stream_closed_midway_closes_the_agents_stream_at_once(refused: bool) -> None:
    # The client left: the agent's stream (its connection, its slots) was closed only
    # when the collector found it, after the slots had been given back.
    candidate = Streaming("1.0", [True]) if refused else _Endless()
    primary = _Endless()
    backend = FallingBack(cast(Any, candidate), cast(Any, primary), lambda: None)
    reads = backend.stream(streamed())
    assert await anext(reads)
    await reads.aclose()
    taken = primary if refused else candidate
    assert isinstance(taken, _Endless) and taken.closed


async def test_a_call_that_falls_back_gets_the_primarys_headers_again() -> None:
    # The candidate got the call without the gateway's credential for the primary; the
    # primary, when the candidate refused it, needs it back.
    candidate, primary = Streaming("1.0", [True]), Streaming("1.0", [False])
    call = streamed()
    call.ctx.backend_headers = {"x-request-id": "r"}  # the candidate's
    backend = FallingBack(cast(Any, candidate), cast(Any, primary), lambda: None,
                          primary_headers={"x-request-id": "r", "authorization": "Bearer p"})
    assert [b async for b in backend.stream(call)]
    assert call.ctx.backend_headers == {"x-request-id": "r", "authorization": "Bearer p"}


class _Forwarding(Agent):
    """Takes the client's own bytes (forward) unless it refuses the connection."""

    async def forward(self, call: Call) -> Any:
        if self.refuses:
            raise backend_unavailable(call, self.config, "refused", sent=False)
        return pb.SendMessageResponse(task=pb.Task(id="t1", context_id="c1"))


async def test_a_passed_through_call_that_falls_back_is_checked_and_counted_as_translated(
        ) -> None:
    # The candidate would have had the client's own bytes (same dialect): what decoding
    # dropped was not counted. The primary gets the call translated: under loss_policy
    # reject it was sent anyway, and the report left the dropped field out; the call was
    # checked against the candidate's card, not the primary's.
    candidate, primary = _Forwarding("0.3", refuses=True), Agent("1.0")
    request = pb.SendMessageRequest(message=pb.Message(
        message_id="m", role=pb.Role.ROLE_USER, parts=[pb.Part(text="x")]))
    call = Call(ops.BY_NAME[ops.SEND], request,
                CallContext(ClientFacts("JSONRPC"), "0.3", tenant="t"))
    loss = call.ctx.loss
    loss.attempt = DECODING
    loss.drop("message.parts[0].filename")  # what decoding the client's document dropped
    loss.attempt = FIRST_ATTEMPT
    loss.passed_through()
    call.ctx.outcome.forwarded = True
    call.backend_card = {"name": "the candidate's"}
    assert loss.request == []

    async def primary_card() -> dict[str, Any]:
        return {"name": "the primary's"}

    backend = FallingBack(cast(Any, candidate), cast(Any, primary), lambda: None,
                          primary_card=primary_card)
    await backend.forward(call)
    assert loss.request == ["message.parts[0].filename"]
    assert call.ctx.outcome.forwarded is False
    assert call.backend_card == {"name": "the primary's"}
