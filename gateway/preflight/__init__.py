"""Preflight: what a config needs beyond its own text. Every file `serve` will open or
parse (TLS certificates, keys and CA bundles, API-key files, JWK set files, backend
credentials, the card-signing key, the SQLite file), every key read from the environment,
every URL; `check-config --connect` also reaches Redis, the OTLP endpoint and each backend
(gateway/preflight/connect.py). `check-config`, `serve` (before it opens anything) and
every reload run these checks, so a config that would fail while the gateway is being
built is refused with the YAML path of each problem named, one line each.

One module per concern: problems (the lines), tls, keys, files, urls, connect, startup
(what only starting can tell: a port in use).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.config.models import GatewayConfig
from gateway.preflight.files import check_auth, check_state_path
from gateway.preflight.keys import check_keys
from gateway.preflight.problems import ConfigProblems, Problems
from gateway.preflight.tls import check_ca_bundle, check_redis_tls_files
from gateway.preflight.urls import check_urls

__all__ = ["ConfigProblems", "preflight", "problems_of"]


def problems_of(config: GatewayConfig, environ: Mapping[str, str] | None = None,
                ) -> list[str]:
    """Every problem preflight finds in ``config``, one line each, YAML path first."""
    problems = Problems()
    check_keys(problems, config, environ)
    if config.auth is not None:
        check_auth(problems, "auth", config.auth)
    for name, tenant in config.tenants.items():
        if tenant.auth is not None:
            check_auth(problems, f"tenants.{name}.auth", tenant.auth)
    check_state_path(problems, config.state)
    if config.state.backend == "redis" and config.state.url:
        check_redis_tls_files(problems, "state.url", config.state.url)
    sentinel = config.state.sentinel
    if config.state.backend == "redis" and sentinel is not None and sentinel.ssl_ca_certs:
        ca = sentinel.ssl_ca_certs
        problems.check("state.sentinel.ssl_ca_certs", lambda: check_ca_bundle(ca))
    check_urls(problems, config)
    return problems.lines


def preflight(config: GatewayConfig, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigProblems (a ConfigError) for what would make building the gateway
    from ``config`` fail, every problem found."""
    lines = problems_of(config, environ)
    if lines:
        raise ConfigProblems(lines)
