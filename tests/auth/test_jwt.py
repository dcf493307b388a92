"""JWT bearer tokens against RSA and EC keys made here, their JWK set served by a local
aiohttp server that rotates keys; every refusal reason told apart, none echoing the token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from gateway.auth.authenticator import Authenticator
from gateway.auth.jwks import JwksSource, parse_jwks
from gateway.auth.jwt_bearer import JwtVerifier, TokenRefused, algorithm_fits_key
from gateway.auth.principal import CHALLENGE_KEY
from gateway.config.auth import AuthConfig, JwtConfig
from tests.support.helpers import ManualClock, serving
from translators.errors import A2AError

ISSUER, AUDIENCE = "https://issuer.test", "a2a-gateway"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_KEY2 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def jwk(key: Any, kid: str) -> dict[str, Any]:
    algo = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
    out: dict[str, Any] = json.loads(algo.to_jwk(key.public_key()))
    return {**out, "kid": kid, "use": "sig"}


@dataclass(frozen=True)
class Offset:
    """A claim's time as seconds from now (now: when the test runs)."""

    seconds: int


def claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 300,
            "scope": "tasks.read tasks.write", **over}


def token(key: Any = RSA_KEY, kid: str | None = "rsa1", alg: str = "RS256",
          **over: Any) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims(**over), key, algorithm=alg, headers=headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def handmade(header: dict[str, Any], body: dict[str, Any], sign: Any) -> str:
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(body).encode())}"
    return f"{signing_input}.{b64(sign(signing_input.encode()))}"


@dataclass
class JwksServer:
    keys: list[dict[str, Any]] = field(default_factory=list)
    hits: int = 0
    url: str = ""


@pytest.fixture
async def jwks_server() -> AsyncIterator[JwksServer]:
    server = JwksServer([jwk(RSA_KEY, "rsa1"), jwk(EC_KEY, "ec1")])

    async def serve(_: web.Request) -> web.Response:
        server.hits += 1
        return web.json_response({"keys": server.keys})

    app = web.Application()
    app.router.add_get("/jwks.json", serve)
    async with serving(app) as base:
        server.url = f"{base}/jwks.json"
        yield server


def config(url: str, **over: Any) -> JwtConfig:
    return JwtConfig.model_validate({"jwks_url": url, "issuer": ISSUER, "audience": [AUDIENCE],
                                     "algorithms": ["RS256", "ES256"], "leeway": 5, **over})


async def refused(verifier: JwtVerifier, value: str) -> TokenRefused:
    with pytest.raises(TokenRefused) as caught:
        await verifier.verify(value)
    assert value not in caught.value.message
    return caught.value


async def test_rs256_and_es256_tokens_name_their_principal(jwks_server: JwksServer) -> None:
    verifier = JwtVerifier(config(jwks_server.url), JwksSource(config(jwks_server.url)))
    principal = await verifier.verify(token())
    assert principal.name == "alice" and principal.method == "jwt"
    assert principal.scopes == {"tasks.read", "tasks.write"}
    principal = await verifier.verify(token(EC_KEY, "ec1", "ES256", sub="bob", scope=None,
                                            scp=["a", "b"]))
    assert principal.name == "bob" and principal.scopes == {"a", "b"}
    assert jwks_server.hits == 1  # cached


# Times are offsets from when the test runs, not from when it was collected: a suite that
# reaches this test minutes after collection must still see `nbf` in the future.
@pytest.mark.parametrize(("over", "failure"), [
    ({"exp": Offset(-60)}, "expired"),
    ({"nbf": Offset(120)}, "not_yet_valid"),
    ({"aud": "someone-else"}, "wrong_audience"),
    ({"iss": "https://evil.test"}, "wrong_issuer"),
    ({"exp": None}, "missing_claim"),
    ({"sub": None}, "missing_claim"),
])
async def test_claims_refused_each_with_its_reason(jwks_server: JwksServer, over: dict[str, Any],
                                                   failure: str) -> None:
    verifier = JwtVerifier(config(jwks_server.url), JwksSource(config(jwks_server.url)))
    now = int(time.time())
    over = {k: now + v.seconds if isinstance(v, Offset) else v for k, v in over.items()}
    body = {k: v for k, v in claims(**over).items() if v is not None}
    value = jwt.encode(body, RSA_KEY, algorithm="RS256", headers={"kid": "rsa1"})
    assert (await refused(verifier, value)).failure == failure


async def test_leeway_accepts_a_token_just_expired(jwks_server: JwksServer) -> None:
    verifier = JwtVerifier(config(jwks_server.url), JwksSource(config(jwks_server.url)))
    assert await verifier.verify(token(exp=int(time.time()) - 2))


async def test_signature_and_algorithm_attacks_are_refused(jwks_server: JwksServer) -> None:
    cfg = config(jwks_server.url)
    verifier = JwtVerifier(cfg, JwksSource(cfg))
    # Signed by another key under the known kid.
    assert (await refused(verifier, token(RSA_KEY2))).failure == "bad_signature"
    # A tampered payload.
    head, _, sig = token().split(".")
    forged = f"{head}.{b64(json.dumps(claims(sub='root')).encode())}.{sig}"
    assert (await refused(verifier, forged)).failure == "bad_signature"
    # alg none, unsigned.
    none = handmade({"alg": "none", "typ": "JWT", "kid": "rsa1"}, claims(), lambda _: b"")
    assert (await refused(verifier, none)).failure == "algorithm_not_allowed"
    # HS256 "signed" with the RSA public key (PEM) as the HMAC secret: key confusion.
    pem = RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    confused = handmade({"alg": "HS256", "typ": "JWT", "kid": "rsa1"}, claims(),
                        lambda data: hmac.new(pem, data, hashlib.sha256).digest())
    assert (await refused(verifier, confused)).failure == "algorithm_not_allowed"
    # An allowed algorithm of the wrong family for the key (ES256 header, RSA kid).
    wrong_family = token(EC_KEY, "rsa1", "ES256")
    assert (await refused(verifier, wrong_family)).failure == "algorithm_not_allowed"
    # An algorithm not in this config's allow-list, though public-key.
    only_es = config(jwks_server.url, algorithms=["ES256"])
    assert (await refused(JwtVerifier(only_es, JwksSource(only_es)), token())).failure \
        == "algorithm_not_allowed"
    assert (await refused(verifier, "not.a.jwt")).failure == "malformed"


@pytest.mark.parametrize("header", [{"alg": "RS256", "kid": 7}, {"alg": "RS256", "kid": ["rsa1"]},
                                    {"alg": "RS256", "kid": "rsa1", "crit": ["exp"]},
                                    {"alg": "RS256", "kid": "rsa1", "crit": "b64"}])
async def test_headers_pyjwt_will_not_read_are_malformed(jwks_server: JwksServer,
                                                         header: dict[str, Any]) -> None:
    # PyJWT refuses these with InvalidTokenError, not its DecodeError subclass.
    cfg = config(jwks_server.url)
    signed = handmade(header, claims(), lambda data: RSAAlgorithm(RSAAlgorithm.SHA256).sign(
        data, RSA_KEY))
    assert (await refused(JwtVerifier(cfg, JwksSource(cfg)), signed)).failure == "malformed"


def test_hmac_never_fits_a_public_key_even_past_the_allow_list() -> None:
    keys = parse_jwks({"keys": [jwk(RSA_KEY, "r"), jwk(EC_KEY, "e")]})
    assert not algorithm_fits_key("HS256", keys["r"])
    assert not algorithm_fits_key("ES384", keys["e"])  # wrong curve
    assert algorithm_fits_key("PS256", keys["r"]) and algorithm_fits_key("ES256", keys["e"])
    # And PyJWT itself refuses an HMAC check with the key object, were it ever asked.
    pem = RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    confused = handmade({"alg": "HS256"}, claims(),
                        lambda data: hmac.new(pem, data, hashlib.sha256).digest())
    with pytest.raises((jwt.InvalidTokenError, TypeError)):
        jwt.decode(confused, keys["r"].jwk.key, algorithms=["HS256"], audience=AUDIENCE)
    # Symmetric and private keys in a set are never used.
    with pytest.raises(Exception, match="no usable"):
        parse_jwks({"keys": [{"kty": "oct", "k": b64(b"secret"), "kid": "h"}]})


async def test_rotation_refetches_on_an_unknown_kid_at_most_once_per_interval(
        jwks_server: JwksServer) -> None:
    clock = ManualClock(1000.0)
    cfg = config(jwks_server.url, jwks_refresh_min_interval=30, jwks_ttl=600)
    source = JwksSource(cfg, clock=clock)
    verifier = JwtVerifier(cfg, source)
    await verifier.verify(token())
    assert jwks_server.hits == 1
    jwks_server.keys = [jwk(RSA_KEY, "rsa1"), jwk(RSA_KEY2, "rsa2")]  # a new key appears
    rotated = token(RSA_KEY2, "rsa2")
    clock.now += 5  # too soon after the last fetch: no refetch
    assert (await refused(verifier, rotated)).failure == "unknown_key"
    assert jwks_server.hits == 1
    clock.now += 30
    assert (await verifier.verify(rotated)).name == "alice"
    assert jwks_server.hits == 2
    clock.now += 1  # an unknown kid right after: not another fetch (no hammering)
    assert (await refused(verifier, token(EC_KEY, "nope", "ES256"))).failure == "unknown_key"
    assert jwks_server.hits == 2
    clock.now += 600  # the TTL passed: fetched again, and the old key is gone
    jwks_server.keys = [jwk(RSA_KEY2, "rsa2")]
    assert (await refused(verifier, token())).failure == "unknown_key"
    assert jwks_server.hits == 3


async def test_unreachable_jwks_is_unavailable_not_unauthenticated(
        unused_tcp_port: int) -> None:
    cfg = config(f"http://127.0.0.1:{unused_tcp_port}/jwks.json", jwks_timeout=2)
    with pytest.raises(A2AError) as caught:
        await JwtVerifier(cfg, JwksSource(cfg)).verify(token())
    assert caught.value.kind.name == "BackendUnavailableError"
    assert "127.0.0.1" not in caught.value.message


async def test_jwks_file_and_the_authenticator_challenge(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY, "rsa1")]}))
    auth = Authenticator.from_config(AuthConfig.model_validate({"required": True, "jwt": {
        "jwks_file": str(path), "issuer": ISSUER, "audience": [AUDIENCE]}}))
    principal = await auth.authenticate({"Authorization": f"Bearer {token()}"})
    assert principal is not None and principal.name == "alice"
    expired = token(exp=int(time.time()) - 3600)
    with pytest.raises(A2AError) as caught:
        await auth.authenticate({"authorization": [f"Bearer {expired}"]})
    err = caught.value
    assert err.kind.name == "UnauthenticatedError" and err.metadata["failure"] == "expired"
    assert err.metadata[CHALLENGE_KEY] == ('Bearer realm="a2a-gateway", error="invalid_token", '
                                           'error_description="the token has expired"')
    assert expired not in err.message and expired not in json.dumps(err.metadata)


async def test_tenants_claim_binds_the_principal(jwks_server: JwksServer) -> None:
    cfg = config(jwks_server.url, tenants_claim="tenants")
    principal = await JwtVerifier(cfg, JwksSource(cfg), "a").verify(
        token(tenants=["a", "b"]))
    assert principal.tenants == {"a"}  # bound to the tenant whose config verified it
    unbound = await JwtVerifier(cfg, JwksSource(cfg)).verify(token(tenants="b c"))
    assert unbound.tenants == {"b", "c"}


async def test_prime_loads_at_start_and_refuses_a_broken_file(
        tmp_path: Path, jwks_server: JwksServer, unused_tcp_port: int) -> None:
    from gateway.auth.jwks import JwksError
    from gateway.auth.service import GatewayAuth
    from gateway.config.auth import AuthConfig

    auth = GatewayAuth(AuthConfig.model_validate({"jwt": {"jwks_url": jwks_server.url}}),
                       {"a": None, "b": None})
    await auth.prime()
    assert jwks_server.hits == 1  # one source for both tenants, loaded once
    down = AuthConfig.model_validate({"jwt": {
        "jwks_url": f"http://127.0.0.1:{unused_tcp_port}/", "jwks_timeout": 1}})
    await GatewayAuth(down, {"a": None}).prime()  # an issuer down at start is only logged
    (tmp_path / "jwks.json").write_text("{}")
    broken = AuthConfig.model_validate({"jwt": {"jwks_file": str(tmp_path / "jwks.json")}})
    with pytest.raises(JwksError):
        await GatewayAuth(broken, {"a": None}).prime()
