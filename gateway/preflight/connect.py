"""`check-config --connect`: reach what the config points at, once each, at the same
time, every attempt bounded by CONNECT_TIMEOUT: the Redis store (PING), the OTLP
endpoint (a TCP connection), each JWK set URL (fetched and read as at start), and each
tenant's backend (HTTP: any answer to a GET of its URL counts, with the TLS settings the
gateway would use; its card URL must answer 200 with a card the gateway can read; gRPC:
the channel gets ready; a backend that is the gateway's own `demo_agent` is skipped).
One line per target that cannot be reached or answers with what cannot be used."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import aiohttp
import grpc

from gateway.auth.jwks import JwksError, fetch_jwks
from gateway.cards.backend import MAX_CARD_BYTES
from gateway.config.auth import AuthConfig, effective
from gateway.config.models import BackendConfig, GatewayConfig
from gateway.config.state import StateConfig, describe_store
from gateway.config.tls import ClientTlsConfig
from gateway.preflight.problems import EXPECTED, describe
from gateway.state import open_store
from gateway.tls.context import client_context, grpc_channel_credentials, grpc_channel_options
from translators.card_serving import parse_any_card
from translators.errors import A2AError
from translators.json_text import parse_json

CONNECT_TIMEOUT = 3.0  # seconds per target; the targets are tried concurrently

_UNREACHABLE: tuple[type[BaseException], ...] = (aiohttp.ClientError, *EXPECTED)
_OTLP_DEFAULTS = {"otlp-grpc": "localhost:4317", "otlp-http": "http://localhost:4318"}


class _Unusable(Exception):
    """A target that answered, with something the gateway cannot use."""


async def _redis(state: StateConfig) -> None:
    store = open_store(state)
    try:
        await store.ping()
    finally:
        await store.close()


async def _tcp(address: str) -> None:
    if "://" in address:
        parts = urlsplit(address)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    else:
        host, _, text = address.rpartition(":")
        host, port = host.strip("[]"), int(text)
    _, writer = await asyncio.open_connection(host, port)
    writer.close()
    await writer.wait_closed()


async def _http(url: str, tls: ClientTlsConfig | None, card: bool) -> None:
    connector = aiohttp.TCPConnector(ssl=client_context(tls) if tls is not None else True)
    async with aiohttp.ClientSession(connector=connector) as session, \
            session.get(url, allow_redirects=False,
                        headers={"Accept": "application/json"}) as resp:
        if not card:
            return  # any answer: something serves HTTP there
        if resp.status != 200:
            raise _Unusable(f"{url} answered HTTP {resp.status}")
        raw = await resp.content.read(MAX_CARD_BYTES + 1)
    if len(raw) > MAX_CARD_BYTES:
        raise _Unusable(f"the card at {url} is larger than {MAX_CARD_BYTES} bytes")
    try:  # what the gateway's discovery does with it (gateway/cards/backend.py)
        parse_any_card(parse_json(raw, what="the card").value)
    except A2AError as exc:
        raise _Unusable(f"{url} serves no agent card the gateway can read: "
                         f"{exc.message}") from None


async def _grpc(target: str, tls: ClientTlsConfig | None) -> None:
    channel = (grpc.aio.secure_channel(target, grpc_channel_credentials(tls),
                                       options=grpc_channel_options(tls))
               if tls is not None and tls.grpc else grpc.aio.insecure_channel(target))
    try:
        await channel.channel_ready()
    finally:
        await channel.close()


async def _jwks(url: str, timeout: float) -> None:
    try:
        await fetch_jwks(url, timeout)
    except JwksError as exc:
        raise _Unusable(f"the JWK set at {url}: {exc}") from None


class _Target(NamedTuple):
    path: str  # the YAML path of the option that names it
    address: str  # as the line shows it (no credentials)
    attempt: Coroutine[Any, Any, None]


def _auth(prefix: str, auth: AuthConfig | None) -> list[_Target]:
    if auth is None or auth.jwt is None or auth.jwt.jwks_url is None:
        return []
    url = auth.jwt.jwks_url
    return [_Target(f"{prefix}.jwt.jwks_url", url, _jwks(url, auth.jwt.jwks_timeout))]


def _backend(path: str, backend: BackendConfig, tls: ClientTlsConfig | None,
             ) -> list[_Target]:
    out: list[_Target] = []
    if backend.card is not None:
        out.append(_Target(f"{path}.card", backend.card, _http(backend.card, tls, card=True)))
    if backend.url is not None:
        out.append(_Target(f"{path}.url", backend.url,
                           _grpc(backend.url, tls) if backend.binding == "GRPC"
                           else _http(backend.url, tls, card=False)))
    return out


async def _attempt(target: _Target, timeout: float) -> str | None:
    try:
        await asyncio.wait_for(target.attempt, timeout)
    except TimeoutError:
        return f"{target.path}: no answer from {target.address} within {timeout:g} s"
    except _Unusable as exc:  # it answered, with something the gateway cannot use
        return f"{target.path}: {exc}"
    except _UNREACHABLE as exc:
        return f"{target.path}: cannot reach {target.address}: {describe(exc)}"
    return None


async def connect_problems(config: GatewayConfig, timeout: float = CONNECT_TIMEOUT,
                           ) -> list[str]:
    """One line per target of ``config`` that cannot be reached within ``timeout``."""
    targets: list[_Target] = []
    if config.state.backend == "redis":
        path = "state.url" if config.state.sentinel is None else "state.sentinel"
        targets.append(_Target(path, describe_store(config.state), _redis(config.state)))
    tracing = config.tracing
    if tracing.exporter in _OTLP_DEFAULTS:
        endpoint = tracing.endpoint or _OTLP_DEFAULTS[tracing.exporter]
        targets.append(_Target("tracing.endpoint", endpoint, _tcp(endpoint)))
    targets.extend(_auth("auth", config.auth))
    demo = config.demo_agent.listen if config.demo_agent is not None else None
    for name, tenant in config.tenants.items():
        targets.extend(_auth(f"tenants.{name}.auth", tenant.auth))
        url = tenant.backend.url or ""
        if demo is not None and demo in (url, urlsplit(url).netloc):
            continue  # the built-in demo agent: `serve` starts it, nothing runs it now
        tls = effective(config.auth, tenant.auth).backend_tls
        targets.extend(_backend(f"tenants.{name}.backend", tenant.backend, tls))
        if tenant.migration is not None and tenant.migration.mode != "off":
            targets.extend(_backend(f"tenants.{name}.migration.candidate",
                                    tenant.migration.candidate, tls))
    found = await asyncio.gather(*(_attempt(target, timeout) for target in targets))
    return [line for line in found if line is not None]
