"""Defects 3, 5, 15, 16, 19: the served card. A header cannot make the gateway sign a card
for another host; every shape verifies; v0.3-only fields reach v0.3 readers and their
loss is reported to others; ETag and 304; the shape served without A2A-Version."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from tests.hardening.hardening_support import ScriptedBackend, post, rpc_body
from tests.support.helpers import MakeGateway, v03


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify(doc: dict[str, Any], key: ec.EllipticCurvePublicKey) -> bool:
    """A served card's JWS (ES256, detached payload: the JCS form of the card without
    `signatures`), checked here independently of the gateway's own code."""
    body = {k: v for k, v in doc.items() if k != "signatures"}
    payload = base64.urlsafe_b64encode(json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).rstrip(b"=")
    for sig in doc.get("signatures") or []:
        raw = _b64(sig["signature"])
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            key.verify(der, sig["protected"].encode() + b"." + payload, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            continue
    return False

CARD_V03 = {"name": "legacy", "description": "d", "version": "1", "protocolVersion": "0.3.0",
            "url": "http://127.0.0.1:1/", "preferredTransport": "JSONRPC",
            "capabilities": {"streaming": True, "stateTransitionHistory": True},
            "supportsAuthenticatedExtendedCard": True,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": []}


@pytest.fixture
def signing_key(tmp_path: Path) -> tuple[str, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = tmp_path / "card.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return str(pem), key


async def card(http: aiohttp.ClientSession, url: str,
               headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    async with http.get(url, headers=headers) as resp:
        return resp.status, resp.headers, (await resp.json() if resp.status == 200 else None)


def urls(doc: dict[str, Any]) -> set[str]:
    return {i["url"] for i in doc.get("supportedInterfaces", [])} | (
        {doc["url"]} if "url" in doc else set())


async def test_forwarded_host_cannot_point_a_signed_card_elsewhere(
        make_gateway: MakeGateway, demo_agent: str,
        signing_key: tuple[str, ec.EllipticCurvePrivateKey]) -> None:
    pem, key = signing_key
    gw = await make_gateway({"d": v03(demo_agent)}, public_url="https://agents.example",
                            card_signing={"key_file": pem})
    evil = {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http",
            "Host": "evil.example"}
    async with aiohttp.ClientSession() as http:
        for version in ("1.0", "0.3", None):
            headers = {**evil, **({"A2A-Version": version} if version else {})}
            status, resp_headers, doc = await card(http, gw + "/.well-known/agent-card.json",
                                                   headers)
            assert status == 200
            assert not any("evil" in u for u in urls(doc)), urls(doc)
            assert all(u.startswith("https://agents.example") for u in urls(doc)
                       if u.startswith("http"))
            # Defect 5: every shape verifies with the gateway's key.
            assert verify(doc, key.public_key()), version
            assert "A2A-Version" in resp_headers["Vary"]


async def test_forwarded_headers_need_a_trusted_proxy(make_gateway: MakeGateway,
                                                      demo_agent: str) -> None:
    fwd = {"X-Forwarded-Host": "proxy.example", "X-Forwarded-Proto": "https"}
    async with aiohttp.ClientSession() as http:
        plain = await make_gateway({"d": v03(demo_agent)}, public_url="https://public.example")
        _, headers, doc = await card(http, plain + "/.well-known/agent-card.json", fwd)
        assert all(u.startswith("https://public.example") for u in urls(doc) if "://" in u)
        assert headers["Vary"] == "A2A-Version"
        behind = await make_gateway({"d": v03(demo_agent)}, public_url="https://public.example",
                                    trusted_proxies=["127.0.0.1"])
        _, headers, doc = await card(http, behind + "/.well-known/agent-card.json", fwd)
        assert all(u.startswith("https://proxy.example") for u in urls(doc) if "://" in u)
        assert "X-Forwarded-Host" in headers["Vary"]


async def test_v03_only_card_fields_reach_v03_readers_and_are_reported_to_others(
        make_gateway: MakeGateway) -> None:
    async with ScriptedBackend().running() as backend, aiohttp.ClientSession() as http:
        backend.card = CARD_V03

        async def extended(request: web.Request, body: dict[str, Any]) -> web.Response:
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": CARD_V03})

        backend.handlers["agent/getAuthenticatedExtendedCard"] = extended
        gw = await make_gateway({"b": v03(backend.url)})
        well_known = gw + "/.well-known/agent-card.json"
        _, headers, doc = await card(http, well_known, {"A2A-Version": "0.3"})
        assert doc["capabilities"]["stateTransitionHistory"] is True
        assert "A2A-Gateway-Dropped" not in headers
        _, headers, doc = await card(http, well_known)  # the union card carries it too
        assert doc["capabilities"]["stateTransitionHistory"] is True
        _, headers, doc = await card(http, well_known, {"A2A-Version": "1.0"})
        assert "stateTransitionHistory" not in doc["capabilities"]
        assert headers["A2A-Gateway-Dropped"] == "capabilities.stateTransitionHistory"
        # The extended card, v0.3 client to v0.3 backend: nothing both can carry is lost.
        _, headers, reply = await post(http, gw + "/b", rpc_body(
            "agent/getAuthenticatedExtendedCard"))
        assert reply["result"]["capabilities"]["stateTransitionHistory"] is True
        assert "A2A-Gateway-Dropped" not in headers


async def test_cards_revalidate_with_etag_and_honour_the_configured_cache_control(
        make_gateway: MakeGateway, demo_agent: str,
        signing_key: tuple[str, ec.EllipticCurvePrivateKey]) -> None:
    pem, _ = signing_key
    gw = await make_gateway({"d": v03(demo_agent)}, public_url="https://public.example",
                            card_signing={"key_file": pem},
                            cards={"cache_control": "public, max-age=300"})
    url = gw + "/.well-known/agent-card.json"
    async with aiohttp.ClientSession() as http:
        status, headers, first = await card(http, url)
        assert status == 200 and headers["Cache-Control"] == "public, max-age=300"
        etag, modified = headers["ETag"], headers["Last-Modified"]
        _, again_headers, again = await card(http, url)
        assert again_headers["ETag"] == etag and again == first  # signed once, stable
        status, headers, _ = await card(http, url, {"If-None-Match": etag})
        assert status == 304 and headers["ETag"] == etag
        status, _, _ = await card(http, url, {"If-Modified-Since": modified})
        assert status == 304
        status, _, _ = await card(http, url, {"If-None-Match": '"other"'})
        assert status == 200
        # Another shape is another document, with its own tag.
        _, headers, _ = await card(http, url, {"A2A-Version": "1.0"})
        assert headers["ETag"] != etag


@pytest.mark.parametrize("shape", ["1.0", "0.3", "union"])
async def test_the_default_shape_is_configurable(make_gateway: MakeGateway, demo_agent: str,
                                                 shape: str) -> None:
    gw = await make_gateway({"d": v03(demo_agent)}, cards={"default_shape": shape})
    async with aiohttp.ClientSession() as http:
        _, _, doc = await card(http, gw + "/.well-known/agent-card.json")
    assert ("supportedInterfaces" in doc) == (shape != "0.3")
    assert ("protocolVersion" in doc) == (shape != "1.0")
