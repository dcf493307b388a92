"""The SSRF guard on client webhook URLs the relay will POST to.

A client hands the gateway a URL and the gateway connects to it: without a guard, any
client could make the gateway reach its own loopback, the private network it sits in,
or the cloud metadata service. Refused by default: loopback, private (RFC 1918, IPv6
ULA), link-local (incl. 169.254.169.254), shared (100.64/10), unspecified, multicast,
reserved and the known metadata addresses, in IPv4, IPv6 and IPv4-in-IPv6 forms.
`push_relay.webhook_allowlist` lets through addresses, networks or host names;
`allow_private_webhooks` turns the guard off.

Checked twice: when the config is registered (a clear InvalidParams for the client) and
at every delivery, where host names are resolved by a resolver that refuses forbidden
addresses at connect time (so a name that later resolves elsewhere cannot slip by).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from gateway.config.models import PushRelayConfig
from translators.errors import A2AError, invalid_params

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata services (named in errors). Most are link-local or private anyway;
# Azure's wire server 168.63.129.16 is a public address and must be listed.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
    "169.254.170.2",  # AWS ECS task metadata
    "169.254.169.123",  # AWS time sync
    "100.100.100.200",  # Alibaba Cloud
    "168.63.129.16",  # Azure wire server
    "192.0.0.192",  # Oracle Cloud
    "fd00:ec2::254",  # AWS IMDS over IPv6
    "fd00:ec2::23",  # AWS DNS over IPv6
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class WebhookRefused(OSError):
    """A webhook address the guard does not allow (raised at connect time too)."""


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo client, NAT64)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why an address may not receive webhooks, or None when it is a public one."""
    inner = _embedded_ipv4(ip)
    if inner is not None:
        reason = forbidden_reason(inner)
        return f"{reason} (embedded in {ip})" if reason else None
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global or ip.is_reserved:
        return "a non-public address"
    return None


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def display_url(url: str) -> str:
    """The URL without userinfo, query and fragment (they may hold secrets)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


class WebhookGuard:
    def __init__(self, settings: PushRelayConfig) -> None:
        self.off = settings.allow_private_webhooks
        self.networks: list[IPNetwork] = []
        self.hosts: set[str] = set()
        for entry in settings.webhook_allowlist:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(entry.rstrip("."))

    def host_allowed(self, host: str) -> bool:
        return self.off or host.lower().rstrip(".") in self.hosts

    def address_refusal(self, ip: IPAddress) -> str | None:
        """Why this address is refused, or None (allowed: public or allow-listed)."""
        if self.off or any(ip in net for net in self.networks if net.version == ip.version):
            return None
        return forbidden_reason(ip)

    def _split(self, url: str) -> tuple[str, int]:
        try:
            parts = urlsplit(url)
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise self._refuse(url, "it cannot be parsed") from None
        if parts.scheme not in ("http", "https"):
            raise self._refuse(url, "only http:// and https:// webhooks are supported")
        if not host:
            raise self._refuse(url, "it has no host")
        return host, port

    def _refuse(self, url: str, why: str) -> A2AError:
        return invalid_params(
            f"webhook URL {display_url(url)} is not allowed: {why}. The gateway refuses "
            f"loopback, private, link-local and metadata addresses unless "
            f"push_relay.webhook_allowlist lists them", url=display_url(url))

    def _check_ip(self, url: str, host: str, ip: IPAddress) -> None:
        reason = self.address_refusal(ip)
        if reason:
            where = f"{host} is" if _parse_ip(host) == ip else f"{host} resolves to {ip},"
            raise self._refuse(url, f"{where} {reason}")

    async def check(self, url: str) -> None:
        """Refuse a client's webhook URL with InvalidParams naming it. Host names are
        resolved first; any forbidden address refuses. A name that does not resolve now
        is let through: delivery resolves again through :meth:`resolver`."""
        host, port = self._split(url)
        if self.host_allowed(host):
            return
        literal = _parse_ip(host)
        if literal is not None:
            self._check_ip(url, host, literal)
            return
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return
        for info in infos:
            ip = _parse_ip(str(info[4][0]))
            if ip is not None:
                self._check_ip(url, host, ip)

    def check_literal(self, url: str) -> None:
        """The delivery-time check for what the resolver never sees (IP literals,
        scheme); raises WebhookRefused."""
        try:
            host, _ = self._split(url)
        except A2AError as err:
            raise WebhookRefused(err.message) from None
        literal = _parse_ip(host)
        if literal is not None and not self.host_allowed(host):
            reason = self.address_refusal(literal)
            if reason:
                raise WebhookRefused(f"{host} is {reason}")

    def resolver(self) -> AbstractResolver:
        return _GuardedResolver(self)


class _GuardedResolver(AbstractResolver):
    """Resolves like aiohttp's default resolver, then refuses forbidden addresses."""

    def __init__(self, guard: WebhookGuard) -> None:
        self._guard = guard
        self._inner: AbstractResolver = DefaultResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if self._guard.host_allowed(host):
            return results
        for result in results:
            ip = _parse_ip(str(result["host"]))
            reason = "an unparseable address" if ip is None else self._guard.address_refusal(ip)
            if reason:
                raise WebhookRefused(f"{host} resolves to {result['host']}, {reason}")
        return results

    async def close(self) -> None:
        await self._inner.close()


def refusal_in(exc: BaseException | None) -> WebhookRefused | None:
    """The guard's refusal somewhere in an exception chain (aiohttp wraps it)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, WebhookRefused):
            return exc
        seen.add(id(exc))
        nxt: Any = exc.__cause__ or exc.__context__ or getattr(exc, "os_error", None)
        exc = nxt
    return None
