"""The YAML configuration, validated by pydantic, with errors that name the YAML path."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from gateway.config.auth import AuthConfig, effective
from gateway.config.backend import BINDINGS as BINDINGS
from gateway.config.backend import VERSIONS as VERSIONS
from gateway.config.backend import BackendConfig as BackendConfig
from gateway.config.backend import Binding as Binding
from gateway.config.backend import DiscoveryConfig as DiscoveryConfig
from gateway.config.backend import Version as Version
from gateway.config.backend import _as_version, _host_port, _Model
from gateway.config.env import EnvOverrideError, apply_env_overrides, name_the_variable
from gateway.config.logs import OLDER_LEVEL, LogConfig, LogLevel
from gateway.config.migration import MigrationConfig
from gateway.config.push_signing import PushSigningConfig
from gateway.config.relay_queue import RelayQueueConfig
from gateway.config.state import StateConfig
from gateway.config.tracing import TracingConfig
from translators.loss import LossPolicy


class ConfigError(Exception):
    """A config that cannot be used; the message names the file and the YAML path."""


class ConfigProblems(ConfigError):
    """Several problems of one config, one line each (``problems``), each naming its YAML
    path: `a2a-gateway` prints them one per line (gateway/preflight/ finds most)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class TenantConfig(_Model):
    backend: BackendConfig
    max_streams: int | None = Field(None, gt=0, description="Streams open through this "
                                    "tenant at once (null: only the backend's and the "
                                    "gateway's limits)")
    auth: AuthConfig | None = Field(None, description="This tenant's auth settings; a "
                                    "field set here replaces the gateway-wide `auth` one")
    task_ownership: bool | None = Field(None, description="A principal sees and acts on "
                                        "only its own tasks (null: state.tasks.ownership); "
                                        "false for agents that share tasks on purpose")
    push_signing: PushSigningConfig | None = Field(None, description="Standard Webhooks "
                                                   "signatures on the push relay's "
                                                   "deliveries for this tenant")
    migration: MigrationConfig | None = Field(None, description="A successor agent beside "
                                              "`backend` (the primary): shadow, canary, "
                                              "cutover (docs/migration.md)")


class ListenConfig(_Model):
    http: str = Field("127.0.0.1:8080", description="host:port of the HTTP listener "
                      "(JSON-RPC, HTTP+JSON, cards, probes)")
    grpc: str | None = Field(None, description="host:port of the gRPC listener (both versions)")
    admin: str | None = Field(None, description="host:port of a plain-HTTP admin listener "
                              "for /metrics, /readyz and /healthz (keep it off the public "
                              "network); when set, /metrics and /readyz leave the main "
                              "listener (/healthz stays there for probes)")
    grpc_reflection: bool = Field(True, description="Serve gRPC server reflection (the A2A "
                                  "services' schema) on the gRPC listener")

    _hp = field_validator("http")(_host_port)

    @field_validator("grpc", "admin")
    @classmethod
    def _grpc(cls, value: str | None) -> str | None:
        return None if value is None else _host_port(value)


class LimitsConfig(_Model):
    """Bounds on what clients may hold (docs/operations.md)."""

    max_connections: int | None = Field(None, gt=0, description="HTTP connections open at "
                                        "once (null: derived from the open-files limit)")
    header_timeout: float = Field(10.0, gt=0, description="Seconds from a request's first "
                                  "byte to the end of its headers")
    body_timeout: float = Field(30.0, gt=0, description="Seconds to read a request body")
    idle_timeout: float = Field(75.0, gt=0, description="Seconds an idle keep-alive "
                                "connection stays open")
    write_timeout: float = Field(30.0, gt=0, description="Seconds one write to a client may "
                                 "block (a client that stops reading a stream)")
    max_streams: int = Field(10000, gt=0, description="Streams open through the gateway at "
                             "once, all tenants")
    pool_wait: float = Field(2.0, ge=0, description="Seconds a call waits for a free slot "
                             "toward its backend (max_calls) before it is refused")
    grpc_max_connections: int | None = Field(None, gt=0, description="gRPC connections open "
                                             "at once (null: a quarter of max_connections)")
    grpc_max_streams_per_connection: int = Field(1000, gt=0, description="Concurrent gRPC "
                                                 "calls on one client connection")


class DemoAgentConfig(_Model):
    listen: str = Field("127.0.0.1:9009", description="host:port the built-in demo agent "
                        "listens on")

    _hp = field_validator("listen")(_host_port)


class CardSigningConfig(_Model):
    """Re-sign served cards (a rewritten card cannot keep the backend's JWS). Signed cards
    name the gateway by `public_url` only (never by a Host or X-Forwarded-* header)."""

    key_file: str = Field(description="PEM file of an EC P-256 private key (ES256)")
    kid: str | None = Field(None, description="Key id put in the JWS protected header")
    jku: str | None = Field(None, description="URL of the JWK set that holds the public key")


def _relay_key(value: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(value.strip() + "=" * (-len(value.strip()) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) not in (16, 24, 32):
        raise ValueError("a relay key is 32 random bytes in base64 (16 or 24 also work); "
                         "make one with: a2a-gateway keygen relay")
    return value.strip()


class PushRelayConfig(_Model):
    """The webhook relay (docs/push-relay.md): the gateway registers its own
    sealed URL with the backend and delivers to the client's webhook in its version."""

    enabled: bool = Field(default=True, description="Relay webhooks when the client's "
                          "and the backend's A2A versions differ")
    always: bool = Field(default=False, description="Relay even when the versions match")
    public_url: str | None = Field(default=None, description="Base URL the backends reach "
                                   "this gateway at (default: public_url, else "
                                   "http://listen.http)")
    keys: list[str] = Field(default_factory=list, description="AES-GCM keys sealing relay "
                            "URLs, base64, newest first: seal with the first, open with any")
    keys_env: str = Field(default="A2A_GATEWAY_RELAY_KEYS", description="Environment "
                          "variable with comma-separated keys; when set it replaces `keys`")
    seal_max_age: float = Field(default=7 * 24 * 3600, ge=0, description="Seconds a relay "
                                "URL stays valid at most (0: no limit besides its task's "
                                "end)")
    spent_after: float = Field(default=60.0, ge=0, description="Seconds a relay URL still "
                               "takes notifications after one that ends its task (late "
                               "artifacts); then it is refused")
    replay_window: float = Field(default=3600.0, gt=0, description="Seconds a notification "
                                 "is remembered: the same one posted again is taken (202) "
                                 "but not delivered twice")
    guard_direct_webhooks: bool = Field(default=True, description="Apply the SSRF guard "
                                        "also to webhooks the backend calls directly (same "
                                        "version, not relayed)")
    # Svix-like: ten retries doubling from 5 s (capped at queue.max_backoff) span about
    # 1.4 hours, enough for a receiver's restart or a deploy, not days of retrying.
    retries: int = Field(default=10, ge=0, le=30, description="Delivery retries after the "
                         "first try (timeouts, connection errors, 408/425/429, 5xx)")
    backoff: float = Field(default=5.0, ge=0, description="Seconds before the first retry; "
                           "doubles each time up to queue.max_backoff")
    timeout: float = Field(default=10.0, gt=0, description="Seconds one delivery attempt "
                           "may take")
    allow_private_webhooks: bool = Field(default=False, description="Turn the SSRF guard "
                                         "off: allow webhooks on loopback, private, "
                                         "link-local and metadata addresses")
    queue: RelayQueueConfig = Field(default_factory=RelayQueueConfig)
    webhook_allowlist: list[str] = Field(default_factory=list, description="Addresses, "
                                         "CIDR networks or host names allowed despite the "
                                         "SSRF guard")

    @field_validator("keys")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        return [_relay_key(k) for k in value]

    @field_validator("public_url")
    @classmethod
    def _public(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {value!r}")
        return value

    @field_validator("webhook_allowlist")
    @classmethod
    def _allowlist(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            entry = raw.strip().lower().strip("[]")
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                if not _HOST_NAME.match(entry):
                    raise ValueError(f"{raw!r} is not an address, CIDR network or host "
                                     f"name") from None
            out.append(entry)
        return out

    @model_validator(mode="after")
    def _lease(self) -> PushRelayConfig:
        # A lease that ran out mid-attempt would let another process send it again.
        if self.queue.lease <= self.timeout:
            raise ValueError(f"push_relay.queue.lease ({self.queue.lease:g} s) must exceed "
                             f"push_relay.timeout ({self.timeout:g} s)")
        return self


_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$")


class CardsConfig(_Model):
    """The card served at `/.well-known/agent-card.json` (docs/cards.md)."""

    default_shape: Literal["union", "1.0", "0.3"] = Field(
        "union", description="Shape served when the request names no A2A-Version: `union` "
        "(both SDK generations parse it; strict v1.0 validators refuse its v0.3 fields), "
        "`1.0` or `0.3`")
    cache_control: str = Field("max-age=60", description="Cache-Control of served cards")


class GatewayConfig(_Model):
    listen: ListenConfig = Field(default_factory=ListenConfig)
    public_url: str | None = Field(None, description="Base URL cards advertise for the HTTP "
                                   "bindings (else X-Forwarded-* or the request's host)")
    public_grpc: str | None = Field(None, description="host:port cards advertise for gRPC")
    card_signing: CardSigningConfig | None = None
    cards: CardsConfig = Field(default_factory=CardsConfig)
    trusted_proxies: list[str] = Field(default_factory=list, description="Addresses or CIDR "
                                       "networks of the reverse proxies whose X-Forwarded-* "
                                       "headers cards believe")
    tenants: dict[str, TenantConfig]
    default_tenant: str | None = Field(None, description="The tenant of a call that "
                                       "names none (null with one tenant: that one)")
    loss_policy: LossPolicy = Field(LossPolicy.REPORT, description="A field one side "
                                    "cannot carry: report it, reject the call, or carry "
                                    "it in part metadata")
    versions: list[Version] = Field(default_factory=lambda: list(VERSIONS),
                                    description="Protocol versions served")
    strict_versions: bool = Field(False, description="The A2A-Version header must match "
                                  "the method's version (false: a v1.0 method needs no "
                                  "header)")
    forward_headers: list[str] = Field(
        default_factory=lambda: ["authorization"],
        description="Client headers passed on to the backend (lowercase names)")
    max_body_bytes: int = Field(8 * 1024 * 1024, gt=0, description="Largest request body "
                                "(HTTP) or message (gRPC) a client may send")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    fast_lane: bool = Field(True, description="Small unary JSON-RPC calls skip aiohttp's web "
                            "layer (docs/performance.md); false: every HTTP request goes "
                            "through aiohttp. Read when the listener opens")
    demo_agent: DemoAgentConfig | None = None
    shutdown_grace: float = Field(10.0, ge=0, description="Seconds unary calls get to finish "
                                  "after SIGTERM; open streams are ended at once, cleanly")
    reload_interval: float = Field(2.0, ge=0, description="Seconds between checks of the "
                                   "config file for changes (0: reload on SIGHUP only)")
    readiness_timeout: float = Field(2.0, gt=0, description="Seconds /readyz waits per backend")
    push_relay: PushRelayConfig = Field(default_factory=PushRelayConfig)
    log: LogConfig = Field(default_factory=LogConfig, description=LogConfig.__doc__)
    log_level: LogLevel | None = Field(None, description=OLDER_LEVEL)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    auth: AuthConfig | None = Field(None, description="Who may call, what, how often, over "
                                    "what channel (docs/security.md); tenants override")
    state: StateConfig = Field(default_factory=StateConfig)
    workers: int | None = Field(
        None, ge=1, le=1024, description="Processes serving the same listeners "
        "(SO_REUSEPORT) under one supervisor; null: one per CPU this process may use "
        "(affinity, capped by a cgroup CPU limit); 1: a single process, no supervisor "
        "(docs/operations.md)")
    event_loop: Literal["asyncio", "uvloop"] = Field(
        "asyncio", description="The event loop `serve` runs on; uvloop needs the `uvloop` "
        "package (`pip install a2a-gateway[speed]`). A2A_GATEWAY_LOOP overrides it.")

    @field_validator("versions", mode="before")
    @classmethod
    def _versions(cls, value: Any) -> Any:
        return [_as_version(v) for v in value] if isinstance(value, list) else value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or CIDR network") from None
        return value

    @model_validator(mode="after")
    def _check(self) -> GatewayConfig:
        if not self.tenants:
            raise ValueError("at least one tenant is required")
        if self.default_tenant is None and len(self.tenants) == 1:
            self.default_tenant = next(iter(self.tenants))
        if self.default_tenant is not None and self.default_tenant not in self.tenants:
            raise ValueError(f"default_tenant {self.default_tenant!r} is not one of the tenants "
                             f"({', '.join(self.tenants)})")
        for name in self.tenants:
            if not name or "/" in name or ":" in name:
                raise ValueError(f"tenant name {name!r} may not be empty or contain '/' or ':'")
        self.forward_headers = [h.lower() for h in self.forward_headers]
        self.log.take_older_level(self.log_level)
        for name, tenant in self.tenants.items():
            if tenant.auth is not None and tenant.auth.server_tls is not None:
                raise ValueError(f"tenants.{name}.auth.server_tls: TLS on the listeners is "
                                 f"gateway-wide (auth.server_tls)")
            auth = effective(self.auth, tenant.auth)
            if auth.required and not auth.authenticates:
                raise ValueError(f"tenants.{name}: auth.required needs a way to "
                                 f"authenticate (api_keys, jwt or mtls)")
            if auth.mtls is not None and (self.auth is None or self.auth.server_tls is None
                                          or self.auth.server_tls.client_ca_file is None):
                raise ValueError(f"tenants.{name}: auth.mtls needs auth.server_tls with a "
                                 f"client_ca_file (client certificates are checked there)")
        if (self.workers or 1) > 1 and self.state.backend == "sqlite" \
                and self.state.path == ":memory:":
            raise ValueError("state.path `:memory:` serves one process: with workers > 1 "
                             "use a file or redis (docs/operations.md)")
        if self.card_signing is not None and not self.public_url:
            raise ValueError("card_signing needs public_url: a signed card names the gateway "
                             "by its configured address, never by what a request says")
        return self


def _problems(exc: ValidationError, source: str, origins: Mapping[str, str]) -> list[str]:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"{source}: {path}: {' '.join(err['msg'].split())}"
                     f"{name_the_variable(path, origins)}")
    return lines


def parse_config(data: Any, source: str = "<config>",
                 origins: Mapping[str, str] | None = None) -> GatewayConfig:
    """``origins``: YAML paths set by environment variables, to name them in errors."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigProblems(_problems(exc, source, origins or {})) from None


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """The config file at ``path`` with the environment's overrides applied
    (``A2A_GATEWAY__...``, gateway/config/env.py; ``environ`` defaults to os.environ)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    try:  # a non-mapping is refused by parse_config
        origins = apply_env_overrides(data, os.environ if environ is None else environ) \
            if isinstance(data, dict) else {}
    except EnvOverrideError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parse_config(data, str(path), origins)


def json_schema() -> dict[str, Any]:
    return GatewayConfig.model_json_schema()
