"""Every client dialect held to the same policy, refused in its own shape: a call without
a credential (401 / UNAUTHENTICATED, with a WWW-Authenticate challenge over HTTP), one
with a key, one the rules deny (403 / PERMISSION_DENIED), and a principal of one tenant
trying another by path, body field, header and gRPC metadata."""

from __future__ import annotations

from typing import Any

import aiohttp
import grpc
import pytest
from structlog.testing import capture_logs

from tests.security.security_support import (
    V10,
    RecordingAgent,
    grpc_send,
    keys,
    post,
    rest_send,
    rpc_send,
)
from tests.support.helpers import MakeGateway, free_port
from translators.grpc_errors import STATUS_DETAILS_KEY

KEY_A, KEY_B, READER = "key-of-a-0123456789", "key-of-b-0123456789", "reader-0123456789"


@pytest.fixture
async def setup(make_gateway: MakeGateway) -> Any:
    async with RecordingAgent("a").running() as a, RecordingAgent("b").running() as b:
        grpc_port = free_port()
        gw = await make_gateway({
            "a": {"backend": {"url": a.url, "version": "0.3"},
                  "auth": {"api_keys": keys(alice=KEY_A, reader=READER),
                           "allow": [{"principals": ["alice"]},
                                     {"principals": ["reader"], "read_only": True}]}},
            "b": {"backend": {"url": b.url, "version": "0.3"},
                  "auth": {"api_keys": keys(bob=KEY_B)}},
        }, grpc_port=grpc_port, auth={"required": True}, default_tenant="a")
        async with aiohttp.ClientSession() as http:
            yield gw, f"127.0.0.1:{grpc_port}", a, b, http


HTTP_DIALECTS = [
    ("jsonrpc-0.3", "/a", rpc_send("0.3"), {}),
    ("jsonrpc-1.0", "/a", rpc_send("1.0"), V10),
    ("rest-0.3", "/a/v1/message:send", rest_send("0.3"), {}),
    ("rest-1.0", "/a/message:send", rest_send("1.0"), V10),
]


def _reason(dialect: str, body: Any) -> str | None:
    """The refusal's reason as the dialect carries it."""
    if dialect == "jsonrpc-1.0":
        return str(body["error"]["data"][0]["reason"])
    if dialect == "rest-1.0":
        return str(body["error"]["details"][0]["reason"])
    return None


@pytest.mark.parametrize(("dialect", "path", "body", "headers"), HTTP_DIALECTS,
                         ids=[d[0] for d in HTTP_DIALECTS])
async def test_http_dialects_refuse_without_a_key_and_serve_with_one(
        setup: Any, dialect: str, path: str, body: Any, headers: dict[str, str]) -> None:
    gw, _, a, _, http = setup
    status, got_headers, refused = await post(http, gw + path, body, headers)
    assert status == 401
    assert got_headers["WWW-Authenticate"].startswith('Bearer realm="a2a-gateway"')
    if dialect.startswith("jsonrpc"):
        assert refused["error"]["code"] == -32000 and refused["id"] == 1
    if _reason(dialect, refused) is not None:
        assert _reason(dialect, refused) == "UNAUTHENTICATED"
    assert a.headers == []  # nothing reached the agent
    status, _, served = await post(http, gw + path, body, {**headers, "X-API-Key": KEY_A})
    assert status == 200, served
    assert "from a" in str(served)
    # The gateway consumed the key: the agent never sees it.
    assert "x-api-key" not in a.headers[-1] and "authorization" not in a.headers[-1]


@pytest.mark.parametrize("version", ["0.3", "1.0"])
async def test_grpc_refuses_without_a_key_and_serves_with_one(setup: Any,
                                                              version: str) -> None:
    _, target, a, _, _ = setup
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await grpc_send(target, version)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    if version == "1.0":  # v1.0 carries an ErrorInfo in the status details
        trailers = dict(refused.value.trailing_metadata() or ())
        assert STATUS_DETAILS_KEY in trailers
    served = await grpc_send(target, version, (("x-api-key", KEY_A),))
    assert b"from a" in served
    assert len(a.headers) == 1


async def test_a_read_only_principal_is_denied_writes_in_every_dialect(setup: Any) -> None:
    gw, target, a, _, http = setup
    for _, path, body, headers in HTTP_DIALECTS:
        status, _, _ = await post(http, gw + path, body, {**headers, "X-API-Key": READER})
        assert status == 403
    for version in ("0.3", "1.0"):
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await grpc_send(target, version, (("x-api-key", READER),))
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert a.headers == []


async def test_a_principal_of_one_tenant_never_reaches_another(setup: Any) -> None:
    gw, target, _, b, http = setup
    with_a = {"X-API-Key": KEY_A}
    # By path: b does not know a's key.
    status, _, _ = await post(http, gw + "/b", rpc_send("0.3"), with_a)
    assert status == 401
    # By body field: the tenant named in the body must be the path's.
    status, _, reply = await post(http, gw + "/a", {
        **rpc_send("1.0"), "params": {**rpc_send("1.0")["params"], "tenant": "b"}},
        {**V10, **with_a})
    assert reply["error"]["code"] == -32602
    # By header: a tenant header does not route an HTTP call; a's key still reaches a.
    status, _, reply = await post(http, gw + "/a", rpc_send("0.3"),
                                  {**with_a, "X-A2A-Tenant": "b"})
    assert status == 200 and "from a" in str(reply)
    # By gRPC metadata: b's policy refuses a's key.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await grpc_send(target, "0.3", (("x-a2a-tenant", "b"), ("x-api-key", KEY_A)))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert b.headers == []  # nothing of a's ever reached b


async def test_the_call_log_names_the_principal_never_the_key(setup: Any) -> None:
    gw, _, _, _, http = setup
    with capture_logs() as logs:
        await post(http, gw + "/a", rpc_send("0.3"), {"X-API-Key": KEY_A})
        await post(http, gw + "/a", rpc_send("0.3"), {"X-API-Key": "not-the-key"})
    calls = [line for line in logs if line["event"] == "call"]
    assert [(c.get("principal"), c.get("auth"), c["outcome"]) for c in calls] == [
        ("alice", "api_key", "ok"), (None, None, "UNAUTHENTICATED")]
    assert "not-the-key" not in str(logs) and KEY_A not in str(logs)
