"""The gateway's public addresses, as cards advertise them.

`X-Forwarded-Proto`, `-Host` and `-Prefix` are believed only from the proxies listed in
`trusted_proxies`: from anyone else they are a way to make the gateway sign a card that
points at another host. Otherwise `public_url` wins, and without it the Host the client
used. What a served card depends on is what its `Vary` names.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from gateway.config.models import GatewayConfig
from gateway.http.request import ClientRequest

_FORWARDED = ("X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Prefix")


class PublicAddress:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._proxies = [ipaddress.ip_network(p, strict=False) for p in config.trusted_proxies]
        vary = ["A2A-Version"]
        if self._proxies:
            vary += _FORWARDED
        if not config.public_url:
            vary.append("Host")
        self.vary = ", ".join(vary)

    def _trusted(self, request: ClientRequest) -> bool:
        if not self._proxies or request.remote is None:
            return False
        try:
            peer = ipaddress.ip_address(request.remote.split("%", 1)[0])
        except ValueError:
            return False
        return any(peer in net for net in self._proxies if net.version == peer.version)

    def http_base(self, request: ClientRequest) -> str:
        """The gateway's public HTTP base as this request reached it."""
        headers = request.headers
        if self._trusted(request) and any(h in headers for h in _FORWARDED[:2]):
            proto = headers.get("X-Forwarded-Proto", request.scheme).split(",")[0].strip()
            host = headers.get("X-Forwarded-Host", request.host).split(",")[0].strip()
            prefix = headers.get("X-Forwarded-Prefix", "").rstrip("/")
            return f"{proto}://{host}{prefix}"
        if self.config.public_url:
            return self.config.public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    def grpc_target(self, http_base: str) -> str | None:
        config = self.config
        if config.public_grpc:
            return config.public_grpc
        if not config.listen.grpc:
            return None
        port = config.listen.grpc.rpartition(":")[2]
        host = urlsplit(http_base).hostname or "127.0.0.1"
        return f"{host}:{port}"

    def fallback_base(self) -> str:
        """For calls that did not come over HTTP (gRPC): public_url, else the listener."""
        tls = self.config.auth is not None and self.config.auth.server_tls is not None
        scheme = "https" if tls else "http"
        return (self.config.public_url or f"{scheme}://{self.config.listen.http}").rstrip("/")
