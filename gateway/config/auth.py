"""The `auth` section: who may call (API keys, JWT, mTLS), what they may do, how often,
and what credential reaches the backend. One model serves the gateway-wide default and a
tenant's override: a field a tenant sets replaces the gateway's (see :func:`effective`).
TLS settings are in :mod:`gateway.config.tls`."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from gateway.config.strict import STRICT
from gateway.config.tls import ClientTlsConfig, ServerTlsConfig
from translators.operations import BY_NAME as OPERATIONS
from translators.operations import (
    EXTENDED_CARD,
    GET_TASK,
    LIST_TASKS,
    PUSH_GET,
    PUSH_LIST,
    SUBSCRIBE,
)

# The operations a `read_only` rule allows.
READ_ONLY: tuple[str, ...] = (GET_TASK, LIST_TASKS, SUBSCRIBE, EXTENDED_CARD, PUSH_GET,
                              PUSH_LIST)
# Signature algorithms a JWT may use: public-key ones only. HMAC needs a shared secret,
# and an HMAC algorithm next to public keys is the classic confusion attack.
ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                                   "ES256", "ES384", "ES512", "EdDSA"})
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


class _Model(BaseModel):
    model_config = STRICT


class SecretSource(_Model):
    """Where a secret is read at start: a file (its first line) or an environment variable."""

    file: str | None = Field(None, description="File holding the secret (first line)")
    env: str | None = Field(None, description="Environment variable holding the secret")

    @model_validator(mode="after")
    def _one(self) -> SecretSource:
        if (self.file is None) == (self.env is None):
            raise ValueError("name exactly one of `file` and `env`")
        return self


class ApiKeyEntry(_Model):
    """One API key: stored as its SHA-256 (`a2a-gateway hash-key` prints it), or read in
    plain from a file / environment variable at start and hashed in memory. Keep such a
    file readable by the gateway's user only."""

    principal: str = Field(min_length=1, description="Who presents this key")
    sha256: str | None = Field(None, description="Hex SHA-256 of the key")
    key_file: str | None = Field(None, description="File holding the key in plain")
    key_env: str | None = Field(None, description="Environment variable holding the key")
    scopes: list[str] = Field(default_factory=list, description="Scopes the key grants")
    tenants: list[str] | None = Field(None, description="Tenants this key may call (null: "
                                      "any tenant whose auth config lists it)")

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is not None and not _SHA256_HEX.match(value.lower()):
            raise ValueError("sha256 must be 64 hex digits (a2a-gateway hash-key prints it)")
        return None if value is None else value.lower()

    @model_validator(mode="after")
    def _one(self) -> ApiKeyEntry:
        given = [v for v in (self.sha256, self.key_file, self.key_env) if v is not None]
        if len(given) != 1:
            raise ValueError("name exactly one of `sha256`, `key_file` and `key_env`")
        return self


class ApiKeysConfig(_Model):
    keys: list[ApiKeyEntry] = Field(min_length=1)
    header: str | None = Field("x-api-key", description="A header holding the bare key "
                               "(null: only Authorization)")
    authorization_schemes: list[str] = Field(
        default_factory=lambda: ["Bearer", "ApiKey"], description="`Authorization: <scheme> "
        "<key>` schemes read as an API key")

    @field_validator("header")
    @classmethod
    def _lower(cls, value: str | None) -> str | None:
        return None if value is None else value.lower()


class JwtConfig(_Model):
    jwks_url: str | None = Field(None, description="URL of the issuer's JWK set")
    jwks_file: str | None = Field(None, description="File holding a JWK set")
    jwks_ttl: float = Field(300.0, gt=0, description="Seconds a fetched JWK set is used")
    jwks_refresh_min_interval: float = Field(
        30.0, ge=0, description="A token with an unknown `kid` refetches the set at most "
        "once per this many seconds (key rotation)")
    jwks_timeout: float = Field(5.0, gt=0, description="Seconds a JWK set fetch may take")
    issuer: str | None = Field(None, description="Required `iss` (null: not checked)")
    audience: list[str] | None = Field(None, description="Accepted `aud` values (null: "
                                       "a token with an `aud` is refused)")
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256"],
                                  description="Accepted signature algorithms: public-key "
                                  "ones only (no `none`, no HMAC)")
    leeway: float = Field(30.0, ge=0, description="Seconds of clock skew allowed on "
                          "exp/nbf/iat")
    principal_claim: str = Field("sub", description="Claim naming the principal")
    scopes_claim: str | None = Field(None, description="Claim holding scopes (null: "
                                     "`scope` space-separated, else `scp` list)")
    tenants_claim: str | None = Field(None, description="Claim listing the tenants the "
                                      "token may call (null: not bound by a claim)")
    require: list[str] = Field(default_factory=lambda: ["exp"],
                               description="Claims a token must have")

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: list[str]) -> list[str]:
        bad = [a for a in value if a not in ASYMMETRIC_ALGORITHMS]
        if bad or not value:
            raise ValueError(f"algorithms must be public-key ones among "
                             f"{sorted(ASYMMETRIC_ALGORITHMS)}; refused: {bad or 'none'}")
        return value

    @model_validator(mode="after")
    def _source(self) -> JwtConfig:
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ValueError("name exactly one of `jwks_url` and `jwks_file`")
        if self.jwks_url is not None and not self.jwks_url.startswith(("https://", "http://")):
            raise ValueError("jwks_url must be an http(s) URL")
        return self


class MtlsConfig(_Model):
    principal_from: Literal["subject_cn", "san_dns", "san_uri", "san_email"] = Field(
        "subject_cn", description="What in the client certificate names the principal")


class AllowRule(_Model):
    """Callers matching every given condition may use the listed operations."""

    principals: list[str] | None = Field(None, description="Principal names (null: any "
                                         "authenticated caller; `*`: anyone, even anonymous)")
    scopes: list[str] = Field(default_factory=list, description="Scopes the caller must "
                              "all hold")
    operations: list[str] | None = Field(None, description="Canonical operation names "
                                         "(null: all)")
    read_only: bool = Field(False, description="Shorthand: GetTask, ListTasks, "
                            "SubscribeToTask, GetExtendedAgentCard, push config get/list")

    @field_validator("operations")
    @classmethod
    def _ops(cls, value: list[str] | None) -> list[str] | None:
        unknown = [op for op in value or () if op not in OPERATIONS]
        if unknown:
            raise ValueError(f"unknown operations {unknown}; known: {sorted(OPERATIONS)}")
        return value

    @model_validator(mode="after")
    def _either(self) -> AllowRule:
        if self.read_only and self.operations is not None:
            raise ValueError("give `operations` or `read_only`, not both")
        return self

    def allowed_operations(self) -> frozenset[str] | None:
        if self.read_only:
            return frozenset(READ_ONLY)
        return None if self.operations is None else frozenset(self.operations)


class RateConfig(_Model):
    rate: float = Field(gt=0, description="Requests per second, refilled continuously")
    burst: int = Field(gt=0, description="Requests allowed at once (bucket size)")


class RateLimitsConfig(_Model):
    tenant: RateConfig | None = Field(None, description="One bucket for all the tenant's "
                                      "callers")
    principal: RateConfig | None = Field(None, description="One bucket per principal "
                                         "(anonymous callers share one)")
    max_calls_per_principal: int | None = Field(None, gt=0, description="Unary calls one "
                                                "principal may have open at once")
    max_streams_per_principal: int | None = Field(None, gt=0, description="Streams one "
                                                  "principal may have open at once")
    on_store_outage: Literal["local", "refuse", "allow"] = Field(
        "local", description="While the shared state store (holding the rate buckets) "
        "cannot be reached: `local` limits with this process's own buckets (each worker "
        "and replica allows the full rate, so the sum may exceed it); `refuse` answers "
        "StoreUnavailable (HTTP 503 + Retry-After, gRPC UNAVAILABLE); `allow` does not "
        "limit the rate")


class OAuthClientConfig(_Model):
    """A client-credentials token the gateway fetches and caches for the backend."""

    token_url: str = Field(description="The token endpoint (client-credentials grant)")
    client_id: str = Field(description="The gateway's client id at the token endpoint")
    client_secret: SecretSource
    scope: str | None = Field(None, description="Scope asked for (null: none)")
    audience: str | None = Field(None, description="Audience asked for (null: none)")
    auth_method: Literal["client_secret_basic", "client_secret_post"] = Field(
        "client_secret_basic", description="How the client secret is sent: HTTP Basic, "
        "or in the form body")
    refresh_before: float = Field(60.0, ge=0, description="Seconds before expiry a token "
                                  "is refreshed")
    timeout: float = Field(10.0, gt=0, description="Seconds a token fetch may take")


class BackendAuthConfig(_Model):
    """What credential reaches the backend. `forward`: the client's Authorization, unless
    the gateway consumed it itself; `drop`: none; `replace`: the gateway's own."""

    mode: Literal["forward", "drop", "replace"] = Field(
        description="forward: the client's forward_headers; drop: no credential; "
        "replace: the gateway's own")
    forward_consumed: bool = Field(False, description="forward: also pass on the "
                                   "credential the gateway verified itself (e.g. a JWT "
                                   "the backend checks too)")
    bearer: SecretSource | None = Field(None, description="replace: a static bearer token")
    api_key: SecretSource | None = Field(None, description="replace: a static API key")
    api_key_header: str = Field("x-api-key", description="replace: header for `api_key`")
    oauth: OAuthClientConfig | None = Field(None, description="replace: a client-"
                                            "credentials token")

    @model_validator(mode="after")
    def _replacement(self) -> BackendAuthConfig:
        given = sum(x is not None for x in (self.bearer, self.api_key, self.oauth))
        if self.mode == "replace" and given != 1:
            raise ValueError("mode replace needs exactly one of `bearer`, `api_key`, `oauth`")
        if self.mode != "replace" and given:
            raise ValueError(f"mode {self.mode} takes no credential")
        if self.forward_consumed and self.mode != "forward":
            raise ValueError("forward_consumed goes with mode forward")
        self.api_key_header = self.api_key_header.lower()
        return self


class AuthConfig(_Model):
    """Gateway-wide under `auth:`, per tenant under `tenants.<t>.auth:`; a field a tenant
    sets replaces the gateway's."""

    required: bool = Field(False, description="Refuse calls without valid credentials "
                           "(false: anonymous calls pass, with no principal)")
    realm: str = Field("a2a-gateway", description="Realm in WWW-Authenticate challenges")
    api_keys: ApiKeysConfig | None = None
    jwt: JwtConfig | None = None
    mtls: MtlsConfig | None = None
    allow: list[AllowRule] | None = Field(None, description="Who may call what (null: "
                                          "every caller that passed authentication)")
    rate_limits: RateLimitsConfig | None = None
    backend_auth: BackendAuthConfig | None = Field(None, description="null: `drop` when "
                                                   "the gateway authenticates, else "
                                                   "`forward`")
    backend_tls: ClientTlsConfig | None = Field(None, description="TLS toward https:// "
                                                "and gRPC backends")
    server_tls: ServerTlsConfig | None = Field(None, description="TLS on the listeners "
                                               "(gateway-wide only)")

    @field_validator("realm")
    @classmethod
    def _realm(cls, value: str) -> str:
        if '"' in value or "\\" in value or not value.isprintable():
            raise ValueError("realm may not contain quotes, backslashes or control characters")
        return value

    @property
    def authenticates(self) -> bool:
        return any(x is not None for x in (self.api_keys, self.jwt, self.mtls))


def effective(gateway: AuthConfig | None, tenant: AuthConfig | None) -> AuthConfig:
    """A tenant's auth settings: the gateway's, with the fields the tenant set replacing
    them (a tenant's `api_keys` replaces the gateway's list, it does not extend it)."""
    base = gateway or AuthConfig()
    if tenant is None:
        return base
    if tenant.server_tls is not None:
        raise ValueError("server_tls is gateway-wide only")
    override = {name: getattr(tenant, name) for name in tenant.model_fields_set}
    return base.model_copy(update=override)
