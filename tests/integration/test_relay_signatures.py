"""Standard Webhooks signatures on relayed deliveries (docs/push-relay.md, "Signatures"):
a real gateway process signs for its tenant with two keys (one from a file, one from the
environment), a real receiver keeps each delivery's exact bytes and headers, and the
`standardwebhooks` package, an independent implementation, is the oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.auth.keygen import webhook_secret
from tests.support.relay_support import FAST, Receiver, gateway, notify, sealed_for
from tests.support.waiting import wait_until


class RawReceiver(Receiver):
    """Keeps each delivery's headers and the bytes as they came, what a verifier reads."""

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[tuple[dict[str, str], bytes]] = []

    async def hook(self, request: web.Request) -> web.Response:
        self.raw.append((dict(request.headers), await request.read()))
        return await super().hook(request)


async def test_deliveries_verify_with_each_key_and_retries_are_signed_afresh(
        tmp_path: Path) -> None:
    new, old = webhook_secret(), webhook_secret()
    (tmp_path / "old.key").write_text(old + "\n")
    keys: Any = [{"env": "A2A_TEST_SIGNING_NEW"}, {"file": str(tmp_path / "old.key")}]
    hooks = RawReceiver()
    hooks.answers = {"/signed": [429]}  # Retry-After: 1, so the retry is a second later
    queue = {**FAST["queue"], "max_backoff": 5}  # type: ignore[dict-item]  # room for it
    with gateway(tmp_path, tenant={"push_signing": {"keys": keys}},
                 env={"A2A_TEST_SIGNING_NEW": new}, queue=queue) as (gw, _):
        async with hooks.up(), aiohttp.ClientSession() as http:
            sealed = sealed_for(f"{hooks.base}/signed", "s1")
            for n in range(3):  # one lane: in order, the first one's retry before the rest
                await notify(http, gw, sealed, "s1", n)
            await wait_until(lambda: len(hooks.raw) >= 4, "three deliveries and a retry")
    first, retry, *rest = hooks.raw
    for headers, body in hooks.raw:
        for key in (new, old):  # either key of the rotation verifies every delivery
            assert Webhook(key).verify(body, headers)["task"]["id"] == "s1"
        assert len(headers["webhook-signature"].split(" ")) == 2
        assert headers["X-A2A-Notification-Token"] == "tok"  # the A2A token stays
    # The retry: the same id and body, a later timestamp and so another signature.
    assert retry[0]["webhook-id"] == first[0]["webhook-id"] and retry[1] == first[1]
    assert int(retry[0]["webhook-timestamp"]) > int(first[0]["webhook-timestamp"])
    assert gw.lines("push relay delivery will be retried")[0]["retry_in"] == 1.0
    assert retry[0]["webhook-signature"] != first[0]["webhook-signature"]
    assert len({h["webhook-id"] for h, _ in [first, *rest]}) == 3
    headers, body = first
    tampered = body.replace(b'"n":0', b'"n":1')
    assert tampered != body
    with pytest.raises(WebhookVerificationError):
        Webhook(new).verify(tampered, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(webhook_secret()).verify(body, headers)  # a key the gateway does not have


async def test_an_unsigned_tenant_sends_no_signature(tmp_path: Path) -> None:
    hooks = RawReceiver()
    with gateway(tmp_path) as (gw, _):
        async with hooks.up(), aiohttp.ClientSession() as http:
            await notify(http, gw, sealed_for(f"{hooks.base}/plain", "p1"), "p1", 0)
            await wait_until(lambda: hooks.raw, "a delivery")
    headers, _ = hooks.raw[0]
    assert headers["webhook-id"].startswith("msg_")
    assert "webhook-signature" not in headers and "webhook-timestamp" not in headers
