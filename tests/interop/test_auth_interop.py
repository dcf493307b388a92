"""Security with the official SDK clients (0.3.26 and 1.3.0) on all three bindings.

Each client authenticates the way its SDK does: the AuthInterceptor driven by the
securitySchemes of the card the gateway serves (1.3.0 on every binding, 0.3.26 on
JSON-RPC), else the httpx client's headers (0.3.26 REST) or the gRPC channel's metadata
(0.3.26 gRPC). Tokens are JWTs signed by a key made here, its JWK set served by a local
HTTP server; refusals are asserted as each client saw them (its error, and the HTTP
status or gRPC code underneath).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.support.helpers import PEERS, SDK_PYTHON, free_port, gateway_cmd, running, write_config

ISSUER, AUDIENCE = "https://issuer.test", "a2a-gateway"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
API_KEY, READER_KEY, WRITER_KEY = "k-secure-0123456789", "k-reader-0123456789", "k-writer-012345"
RUNS = [(sdk, binding) for sdk in ("0.3", "1.0") for binding in ("JSONRPC", "HTTP+JSON", "GRPC")]
# One rate-limited principal per run, so that runs in parallel do not share a bucket.
BURST_KEYS = {run: f"k-burst-{i}-0123456789" for i, run in enumerate(RUNS)}
BURST, RATE = 3, 1.0


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token(key: Any = KEY, **over: Any) -> str:
    now = int(time.time())
    claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600,
              **over}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


class _Jwks(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Secured:
    http: str
    grpc: str
    logs: Path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A gateway in front of its demo agent, with three tenants: `secure` (API key or JWT
    required), `readonly` (a reader and a writer) and `limited` (a rate per principal)."""
    logs = tmp_path_factory.mktemp("auth-interop")
    jwk = {**json.loads(RSAAlgorithm.to_jwk(KEY.public_key())), "kid": "k1", "use": "sig"}
    _Jwks.body = json.dumps({"keys": [jwk]}).encode()
    jwks = ThreadingHTTPServer(("127.0.0.1", 0), _Jwks)
    threading.Thread(target=jwks.serve_forever, daemon=True).start()
    port, grpc_port, demo_port = free_port(), free_port(), free_port()
    demo = {"url": f"http://127.0.0.1:{demo_port}/", "version": "0.3"}
    keys = {"keys": [{"principal": "svc", "sha256": sha(API_KEY)}]}
    config = write_config(logs / "gateway.yaml", {
        "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
        "demo_agent": {"listen": f"127.0.0.1:{demo_port}"},
        "auth": {"required": True},
        "tenants": {
            "secure": {"backend": demo, "auth": {
                "api_keys": keys,
                "jwt": {"jwks_url": f"http://127.0.0.1:{jwks.server_port}/jwks.json",
                        "issuer": ISSUER, "audience": [AUDIENCE]}}},
            "readonly": {"backend": demo, "auth": {
                "api_keys": {"keys": [{"principal": "reader", "sha256": sha(READER_KEY)},
                                      {"principal": "writer", "sha256": sha(WRITER_KEY)}]},
                "allow": [{"principals": ["reader"], "read_only": True},
                          {"principals": ["writer"]}]}},
            "limited": {"backend": demo, "auth": {
                "api_keys": {"keys": [{"principal": f"burst-{i}", "sha256": sha(k)}
                                      for i, k in enumerate(BURST_KEYS.values())]},
                "rate_limits": {"principal": {"rate": RATE, "burst": BURST}}}},
        },
    })
    try:
        with running(gateway_cmd(config), port, log=logs / "gateway.log"):
            yield Secured(f"http://127.0.0.1:{port}", f"127.0.0.1:{grpc_port}", logs)
    finally:
        jwks.shutdown()


def probe(secured: Secured, sdk: str, binding: str, attempts: list[dict[str, Any]],
          ) -> dict[str, Any]:
    script = PEERS / "auth_client.py"
    cmd = [str(SDK_PYTHON[sdk]), str(script), "--http", secured.http, "--grpc", secured.grpc,
           "--transport", binding, "--attempts", json.dumps(attempts)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise AssertionError(f"probe failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def attempts_for(run: tuple[str, str]) -> list[dict[str, Any]]:
    bearer = {"tenant": "secure", "scheme": "bearer", "op": "send"}
    return [
        {"label": "no_credential", "tenant": "secure", "op": "send"},
        {"label": "jwt", **bearer, "credential": token()},
        {"label": "api_key", "tenant": "secure", "scheme": "apiKey", "op": "send",
         "credential": API_KEY},
        {"label": "wrong_key", "tenant": "secure", "scheme": "apiKey", "op": "send",
         "credential": "not-a-key"},
        {"label": "wrong_token", **bearer, "credential": "not.a.token"},
        {"label": "expired", **bearer, "credential": token(exp=int(time.time()) - 3600)},
        {"label": "bad_signature", **bearer, "credential": token(OTHER_KEY)},
        {"label": "wrong_audience", **bearer, "credential": token(aud="someone-else")},
        {"label": "reader_reads", "tenant": "readonly", "scheme": "apiKey",
         "credential": READER_KEY, "op": "get_task"},
        {"label": "reader_writes", "tenant": "readonly", "scheme": "apiKey",
         "credential": READER_KEY, "op": "send"},
        {"label": "writer_writes", "tenant": "readonly", "scheme": "apiKey",
         "credential": WRITER_KEY, "op": "send"},
        # A burst past the bucket, then a pause long enough for one token to come back.
        {"label": "burst", "tenant": "limited", "scheme": "apiKey",
         "credential": BURST_KEYS[run], "op": "send", "count": BURST + 2,
         "pause": 1.2 / RATE},
    ]


@pytest.fixture(scope="module")
def results(secured: Secured) -> dict[tuple[str, str], dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = pool.map(lambda run: probe(secured, *run, attempts_for(run)), RUNS)
        return dict(zip(RUNS, done, strict=True))


IDS = [f"{sdk}-{binding}" for sdk, binding in RUNS]
UNAUTHENTICATED = {"JSONRPC": 401, "HTTP+JSON": 401, "GRPC": "UNAUTHENTICATED"}
DENIED = {"JSONRPC": 403, "HTTP+JSON": 403, "GRPC": "PERMISSION_DENIED"}
LIMITED = {"JSONRPC": 429, "HTTP+JSON": 429, "GRPC": "RESOURCE_EXHAUSTED"}


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_each_sdk_client_authenticates_with_a_token_and_with_an_api_key(
        results: dict[tuple[str, str], dict[str, Any]], run: tuple[str, str]) -> None:
    got = results[run]
    assert got["jwt"] == {"ok": True, "text": "echo: hello"}
    assert got["api_key"] == {"ok": True, "text": "echo: hello"}


@pytest.mark.parametrize("run", RUNS, ids=IDS)
@pytest.mark.parametrize("label", ["no_credential", "wrong_key", "wrong_token", "expired",
                                   "bad_signature", "wrong_audience"])
def test_each_sdk_client_is_refused_without_a_valid_credential(
        results: dict[tuple[str, str], dict[str, Any]], run: tuple[str, str],
        label: str) -> None:
    got = results[run][label]
    assert got["ok"] is False, got
    assert got["status"] == UNAUTHENTICATED[run[1]], got
    if run[1] != "GRPC":  # an HTTP refusal names the schemes the client may use
        assert "Bearer" in (got["wwwAuthenticate"] or ""), got


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_a_read_only_principal_reads_but_does_not_write(
        results: dict[tuple[str, str], dict[str, Any]], run: tuple[str, str]) -> None:
    got = results[run]
    # Let through to the agent, which does not know the task.
    read = got["reader_reads"]
    assert read["ok"] is False and "not found" in read["error"]["message"].lower(), read
    assert got["reader_writes"]["ok"] is False
    assert got["reader_writes"]["status"] == DENIED[run[1]], got["reader_writes"]
    assert got["writer_writes"] == {"ok": True, "text": "echo: hello"}


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_a_burst_over_the_rate_is_refused_with_retry_after_then_served_again(
        results: dict[tuple[str, str], dict[str, Any]], run: tuple[str, str]) -> None:
    calls = results[run]["burst"]
    served, refused, after_refill = calls[:BURST], calls[BURST:-1], calls[-1]
    assert all(c == {"ok": True, "text": "echo: hello"} for c in served), calls
    for call in refused:
        assert call["ok"] is False and call["status"] == LIMITED[run[1]], call
        assert call["retryAfter"] == "1", call
    assert after_refill == {"ok": True, "text": "echo: hello"}, calls
