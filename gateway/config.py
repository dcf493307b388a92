"""The YAML configuration, validated by pydantic, with errors that name the YAML path."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from translators.loss import LossPolicy

Binding = Literal["JSONRPC", "HTTP+JSON", "GRPC"]
Version = Literal["0.3", "1.0"]


class ConfigError(Exception):
    """A config that cannot be used; the message names the file and the YAML path."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _as_version(value: Any) -> Any:
    # YAML reads `version: 1.0` as a float; users should not have to quote it.
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{float(value):.1f}"
    return value


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise ValueError(f"expected host:port, got {value!r}")
    return value


class BackendConfig(_Model):
    url: str = Field(description="Where the backend agent listens (JSON-RPC endpoint URL)")
    version: Version
    binding: Binding = "JSONRPC"
    timeout: float = Field(60.0, gt=0, description="Seconds a unary call may take")
    connect_timeout: float = Field(5.0, gt=0)
    stream_idle_timeout: float = Field(300.0, gt=0,
                                       description="Seconds a stream may stay silent")
    tenant: str | None = Field(None, description="tenant to send to a v1.0 backend")
    headers: dict[str, str] = Field(default_factory=dict,
                                    description="Static headers added to every backend call")
    subscribe_verb: Literal["POST", "GET"] = Field(
        "POST", description="HTTP+JSON subscribe verb tried first (the other on 405)")

    _v = field_validator("version", mode="before")(_as_version)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"backend url must start with http:// or https://, got {value!r}")
        return value


class TenantConfig(_Model):
    backend: BackendConfig


class ListenConfig(_Model):
    http: str = "127.0.0.1:8080"
    grpc: str | None = None

    _hp = field_validator("http")(_host_port)


class DemoAgentConfig(_Model):
    listen: str = "127.0.0.1:9009"

    _hp = field_validator("listen")(_host_port)


class GatewayConfig(_Model):
    listen: ListenConfig = Field(default_factory=ListenConfig)
    public_url: str | None = None
    tenants: dict[str, TenantConfig]
    default_tenant: str | None = None
    loss_policy: LossPolicy = LossPolicy.REPORT
    versions: list[Version] = Field(default_factory=lambda: ["1.0", "0.3"])
    strict_versions: bool = False
    forward_headers: list[str] = Field(
        default_factory=lambda: ["authorization"],
        description="Client headers passed on to the backend (lowercase names)")
    max_body_bytes: int = Field(8 * 1024 * 1024, gt=0)
    demo_agent: DemoAgentConfig | None = None
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("versions", mode="before")
    @classmethod
    def _versions(cls, value: Any) -> Any:
        return [_as_version(v) for v in value] if isinstance(value, list) else value

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
        return self


def _format(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {path}: {err['msg']}")
    return "\n".join(lines)


def parse_config(data: Any, source: str = "<config>") -> GatewayConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source} is not a valid gateway config:\n{_format(exc)}") from None


def load_config(path: str | Path) -> GatewayConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    return parse_config(data, str(path))


def json_schema() -> dict[str, Any]:
    return GatewayConfig.model_json_schema()
