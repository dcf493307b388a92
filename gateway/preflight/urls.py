"""URLs and addresses in the config: an http(s) URL has a host and a port that parses,
a host:port has both. (Listen addresses are checked when the config is parsed; whether
they can be bound is known only at start: gateway/preflight/startup.py.)"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

from gateway.config.auth import AuthConfig
from gateway.config.backend import _host_port
from gateway.config.models import GatewayConfig
from gateway.preflight.problems import Problems


def check_http_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host")
    try:
        parts.port  # noqa: B018 (it parses the port)
    except ValueError:
        raise ValueError(f"{url!r} has a bad port") from None
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(f"{url!r} contains spaces or control characters")


def check_otlp_endpoint(exporter: str, endpoint: str) -> None:
    """otlp-grpc takes host:port or a URL; otlp-http a URL (gateway/observability/tracing.py)."""
    if exporter == "otlp-grpc" and "://" not in endpoint:
        _host_port(endpoint)
    else:
        check_http_url(endpoint)


def _auth_urls(prefix: str, auth: AuthConfig | None) -> list[tuple[str, str | None]]:
    if auth is None:
        return []
    backend = auth.backend_auth
    return [(f"{prefix}.jwt.jwks_url", auth.jwt.jwks_url if auth.jwt else None),
            (f"{prefix}.backend_auth.oauth.token_url",
             backend.oauth.token_url if backend and backend.oauth else None)]


def check_urls(problems: Problems, config: GatewayConfig) -> None:
    urls: list[tuple[str, str | None]] = [
        ("public_url", config.public_url),
        ("push_relay.public_url", config.push_relay.public_url),
        ("card_signing.jku", config.card_signing.jku if config.card_signing else None),
        *_auth_urls("auth", config.auth)]
    for name, tenant in config.tenants.items():
        backends = [(f"tenants.{name}.backend", tenant.backend)]
        if tenant.migration is not None:
            backends.append((f"tenants.{name}.migration.candidate", tenant.migration.candidate))
        for where, backend in backends:
            if backend.binding != "GRPC":
                urls.append((f"{where}.url", backend.url))
            urls.append((f"{where}.card", backend.card))
        urls.extend(_auth_urls(f"tenants.{name}.auth", tenant.auth))
    for path, url in urls:
        if url is not None:
            problems.check(path, partial(check_http_url, url))
    if config.public_grpc is not None:
        public_grpc = config.public_grpc
        problems.check("public_grpc", lambda: _host_port(public_grpc))
    tracing = config.tracing
    if tracing.exporter in ("otlp-grpc", "otlp-http") and tracing.endpoint is not None:
        endpoint = tracing.endpoint
        problems.check("tracing.endpoint",
                       lambda: check_otlp_endpoint(tracing.exporter, endpoint))
