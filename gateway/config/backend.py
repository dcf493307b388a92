"""A tenant's backend in the YAML configuration: where it is, how it is reached, and the
bounds of each call to it (`tenants.<name>.backend`, and a migration's `candidate`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from gateway.config.strict import STRICT

Binding = Literal["JSONRPC", "HTTP+JSON", "GRPC"]
Version = Literal["0.3", "1.0"]
BINDINGS: tuple[Binding, ...] = ("JSONRPC", "HTTP+JSON", "GRPC")
VERSIONS: tuple[Version, ...] = ("1.0", "0.3")


class _Model(BaseModel):
    model_config = STRICT


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


class DiscoveryConfig(_Model):
    """How to pick among the interfaces a backend's card lists."""

    prefer_version: Version = Field("1.0", description="Version picked when the card "
                                    "offers both")
    bindings: list[Binding] = Field(default_factory=lambda: list(BINDINGS),
                                    description="Bindings the gateway may use, in preference order")

    _v = field_validator("prefer_version", mode="before")(_as_version)


class BackendConfig(_Model):
    url: str | None = Field(None, description="The backend's endpoint: JSON-RPC URL, REST "
                            "base URL, or host:port for gRPC. Optional when `card` is given.")
    version: Version | None = Field(None, description="Required with `url`")
    binding: Binding = Field("JSONRPC", description="The backend's binding, with `url`")
    card: str | None = Field(None, description="URL of the backend's agent card: discover "
                             "url/version/binding from it (and pre-check capabilities)")
    card_ttl: float = Field(300.0, gt=0, description="Seconds a fetched card stays fresh")
    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig)
    precheck: bool = Field(True, description="Refuse calls the backend card says it cannot "
                           "serve (streaming, push, extended card, required extensions)")
    timeout: float = Field(60.0, gt=0, description="Seconds a unary call may take")
    connect_timeout: float = Field(5.0, gt=0, description="Seconds to connect to the "
                                   "backend")
    stream_idle_timeout: float = Field(300.0, gt=0,
                                       description="Seconds a stream may stay silent")
    first_event_timeout: float = Field(60.0, gt=0, description="Seconds a stream may take "
                                       "to send its first event")
    stream_max_duration: float = Field(3600.0, ge=0, description="Seconds a stream may last "
                                       "in all (0: no limit)")
    max_answer_bytes: int = Field(16 * 1024 * 1024, gt=0, description="Largest answer (or "
                                  "single stream event) read from the backend")
    max_calls: int = Field(256, gt=0, description="Unary calls in flight to this backend "
                           "address; more wait up to limits.pool_wait, then are refused")
    max_streams: int = Field(1000, gt=0, description="Streams open to this backend address; "
                             "more are refused (ResourceExhausted)")
    header_precedence: Literal["backend", "client"] = Field(
        "backend", description="When a forwarded client header (forward_headers) and one of "
        "`headers` have the same name: `backend` sends the configured one, `client` the "
        "client's")
    tenant: str | None = Field(None, description="tenant to send to a v1.0 backend")
    headers: dict[str, str] = Field(default_factory=dict,
                                    description="Static headers added to every backend call")
    subscribe_verb: Literal["POST", "GET"] = Field(
        "POST", description="HTTP+JSON subscribe verb tried first (the other on 405)")
    fallback: bool = Field(True, description="When the interface in use cannot do an "
                           "operation (UNIMPLEMENTED, HTTP 405/501, a NotImplemented 500), "
                           "use another interface of the same version that the backend's "
                           "card lists, and remember it per operation")
    pass_through: bool = Field(True, description="Forward a unary call whose client speaks "
                               "this backend's dialect (binding and version) as it came, "
                               "without translating it, when the gateway has nothing in it "
                               "to change (no push config, no tenant field)")

    _v = field_validator("version", mode="before")(_as_version)

    @model_validator(mode="after")
    def _endpoint(self) -> BackendConfig:
        if self.url is None:
            if self.card is None:
                raise ValueError("a backend needs `url` (with `version`) or `card`")
            return self
        if self.version is None:
            raise ValueError("`version` is required when `url` is given")
        if self.binding == "GRPC":
            # gRPC targets are host:port; accept the URL forms people paste.
            target = self.url.removeprefix("grpc://").removeprefix("http://").rstrip("/")
            self.url = _host_port(target)
        elif not self.url.startswith(("http://", "https://")):
            raise ValueError(f"backend url must start with http:// or https://, got {self.url!r}")
        return self
