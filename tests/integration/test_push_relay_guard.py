"""The push relay's SSRF guard: which client webhook URLs are refused, and the allow-list."""

from __future__ import annotations

import pytest

from gateway.config.models import ConfigError, PushRelayConfig, parse_config
from gateway.relay.guard import WebhookGuard
from tests.support.helpers import v03
from translators.errors import A2AError


@pytest.mark.parametrize(("url", "why"), [
    ("http://10.1.2.3/h", "private"),
    ("http://172.16.0.1/h", "private"),
    ("http://192.168.0.10:8080/h", "private"),
    ("http://127.0.0.1:9/h", "loopback"),
    ("http://localhost:9/h", "loopback"),  # a name: resolved first
    ("http://2130706433/h", "loopback"),  # 127.0.0.1 as one number
    ("http://0.0.0.0/h", "unspecified"),
    ("http://100.64.0.1/h", "non-public"),  # shared address space
    ("http://169.254.169.254/latest/meta-data", "metadata"),
    ("http://100.100.100.200/", "metadata"),
    ("http://168.63.129.16/", "metadata"),  # public, but Azure's wire server
    ("http://[::1]/h", "loopback"),
    ("http://[fe80::1]/h", "link-local"),
    ("http://[fc00::1]/h", "private"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://[::ffff:127.0.0.1]/h", "loopback"),  # IPv4-mapped
    ("http://[::ffff:169.254.169.254]/h", "metadata"),
    ("http://[64:ff9b::a9fe:a9fe]/h", "metadata"),  # NAT64 of 169.254.169.254
    ("ftp://hooks.example.com/h", "only http"),
])
async def test_ssrf_guard_refuses(url: str, why: str) -> None:
    with pytest.raises(A2AError) as info:
        await WebhookGuard(PushRelayConfig()).check(url)
    assert info.value.kind.name == "InvalidParamsError"
    assert why in info.value.message
    assert url.split("?")[0].split("://")[0] in info.value.message
    assert "webhook URL" in info.value.message


@pytest.mark.parametrize("url", [
    "http://93.184.216.34/hook",  # a public address
    "https://hooks.example/x",  # does not resolve now: delivery checks again
])
async def test_ssrf_guard_lets_public_urls_through(url: str) -> None:
    await WebhookGuard(PushRelayConfig()).check(url)


async def test_ssrf_allow_list() -> None:
    guard = WebhookGuard(PushRelayConfig(webhook_allowlist=[
        "127.0.0.1", "10.0.0.0/8", "fd00::/8", "hooks.internal"]))
    for url in ("http://127.0.0.1:9/h", "http://10.9.8.7/h", "http://[fd00:ec2::254]/h",
                "http://hooks.internal/h", "http://HOOKS.internal./h"):
        await guard.check(url)
    for url in ("http://192.168.1.1/h", "http://[::1]/h", "http://169.254.169.254/h"):
        with pytest.raises(A2AError):
            await guard.check(url)
    await WebhookGuard(PushRelayConfig(allow_private_webhooks=True)).check("http://[::1]/h")


def test_allow_list_entries_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"push_relay\.webhook_allowlist"):
        parse_config({"tenants": {"t": v03("http://127.0.0.1:1/")},
                      "push_relay": {"webhook_allowlist": ["http://x/"]}})
    with pytest.raises(ConfigError, match=r"push_relay\.keys"):
        parse_config({"tenants": {"t": v03("http://127.0.0.1:1/")},
                      "push_relay": {"keys": ["too-short"]}})
