"""A bearer token PyJWT will not read is an authentication failure in every dialect (401,
JSON-RPC -32000, gRPC UNAUTHENTICATED), never an Internal error with a traceback:
whatever its header holds (a non-string `kid`, a `crit` member, `alg: none`, bad base64,
a header that is not an object)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from structlog.testing import capture_logs

from tests.security.security_support import (
    V10,
    RecordingAgent,
    grpc_send,
    post,
    rest_send,
    rpc_send,
)
from tests.support.helpers import MakeGateway, free_port
from tests.support.waiting import wait_until

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signed(header: Any) -> str:
    """A token with ``header`` (any JSON), signed RS256 by the issuer's key."""
    now = int(time.time())
    body = {"sub": "alice", "iat": now, "exp": now + 300}
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
    signature = RSAAlgorithm(RSAAlgorithm.SHA256).sign(signing_input.encode(), KEY)
    return f"{signing_input}.{_b64(signature)}"


MALFORMED = {
    "kid-not-a-string": _signed({"alg": "RS256", "typ": "JWT", "kid": 5}),
    "kid-an-object": _signed({"alg": "RS256", "kid": {"k": "rsa1"}}),
    "crit-member": _signed({"alg": "RS256", "kid": "rsa1", "crit": ["exp"]}),
    "crit-unknown": _signed({"alg": "RS256", "kid": "rsa1", "crit": ["x-private"]}),
    "alg-none": _b64(b'{"alg":"none","kid":"rsa1"}') + "." + _b64(b'{"sub":"alice"}') + ".",
    "bad-base64-header": "!!not-base64!!." + _b64(b'{"sub":"alice"}') + ".c2ln",
    "header-not-an-object": _signed(["RS256"]),
    "header-a-string": _signed("RS256"),
}

HTTP = [("jsonrpc-0.3", "/a", rpc_send("0.3"), {}),
        ("jsonrpc-1.0", "/a", rpc_send("1.0"), V10),
        ("rest-0.3", "/a/v1/message:send", rest_send("0.3"), {}),
        ("rest-1.0", "/a/message:send", rest_send("1.0"), V10)]


@pytest.fixture
async def setup(make_gateway: MakeGateway, tmp_path: Path) -> Any:
    jwks = tmp_path / "jwks.json"
    public = json.loads(RSAAlgorithm.to_jwk(KEY.public_key()))
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "rsa1", "use": "sig"}]}))
    async with RecordingAgent("a").running() as agent:
        grpc_port = free_port()
        gw = await make_gateway(
            {"a": {"backend": {"url": agent.url, "version": "0.3"}}}, grpc_port=grpc_port,
            auth={"required": True, "jwt": {"jwks_file": str(jwks)}}, default_tenant="a")
        async with aiohttp.ClientSession() as http:
            yield gw, f"127.0.0.1:{grpc_port}", agent, http


def _errors(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in logs if line.get("log_level") in ("error", "critical")
            or "exc_info" in line or "exception" in line]


@pytest.mark.parametrize("name", sorted(MALFORMED))
async def test_a_malformed_token_is_refused_401_in_every_dialect(setup: Any, name: str) -> None:
    gw, target, agent, http = setup
    bearer = f"Bearer {MALFORMED[name]}"
    with capture_logs() as logs:
        for dialect, path, body, headers in HTTP:
            status, got_headers, refused = await post(
                http, gw + path, body, {**headers, "Authorization": bearer})
            assert status == 401, (dialect, refused)
            # RFC 6750: invalid_request for a token that does not parse, else invalid_token.
            assert 'error="invalid_' in got_headers["WWW-Authenticate"], dialect
            if dialect.startswith("jsonrpc"):
                assert refused["error"]["code"] == -32000, (dialect, refused)
            if dialect == "jsonrpc-1.0":
                assert refused["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
            if dialect == "rest-1.0":
                assert refused["error"]["details"][0]["reason"] == "UNAUTHENTICATED"
        for version in ("0.3", "1.0"):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await grpc_send(target, version, (("authorization", bearer),))
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED, version
        # A gRPC call's line is written once its answer is out: the client can have it
        # first (the last line was logged after the block, twice in three loaded runs).
        await wait_until(lambda: sum(line["event"] == "call" for line in logs) >= 6,
                         "the six calls' log lines")
    assert agent.headers == []  # nothing reached the agent
    calls = [line for line in logs if line["event"] == "call"]
    assert [c["outcome"] for c in calls] == ["UNAUTHENTICATED"] * 6
    assert _errors(logs) == []
    assert MALFORMED[name] not in str(logs)
