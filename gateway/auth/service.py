"""The whole security policy of a gateway, per tenant: built once from config (and again
on reload), asked by every ingress with a plain mapping of headers / metadata and the
peer certificate, so all six client dialects are held to the same rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.auth.apikeys import ApiKeys
from gateway.auth.authenticator import Authenticator
from gateway.auth.authorize import Authorizer
from gateway.auth.backend_creds import BackendCredentials
from gateway.auth.jwks import JwksSource
from gateway.auth.jwt_bearer import JwtVerifier
from gateway.auth.mtls import PeerCert
from gateway.auth.principal import Headers, Principal, permission_denied, unauthenticated
from gateway.auth.ratelimit import (
    BucketStore,
    Concurrency,
    LocalBuckets,
    StoreOutage,
    TrafficLimits,
)
from gateway.config.auth import AuthConfig, JwtConfig, effective


@dataclass
class TenantAuth:
    tenant: str
    config: AuthConfig
    authenticator: Authenticator
    authorizer: Authorizer
    limits: TrafficLimits
    backend: BackendCredentials

    async def admit(self, headers: Headers, peer_cert: PeerCert, operation: str,
                    ) -> Principal | None:
        """Who calls, refused unless they may call ``operation`` here now: raises
        UnauthenticatedError, PermissionDeniedError or ResourceExhaustedError. Hold
        ``limits.hold(principal, streaming)`` around the call itself."""
        principal = await self.authenticator.authenticate(headers, peer_cert)
        self.authorizer.authorize(principal, self.tenant, operation)
        await self.limits.admit(principal)
        return principal


class GatewayAuth:
    """Every tenant's :class:`TenantAuth`, sharing JWK set caches (one per source) and
    the rate-limit store. On a config reload, build a new one with the old one as
    ``previous``: buckets and open-call counts carry over (a reload is no rate reset)."""

    def __init__(self, default: AuthConfig | None, tenants: Mapping[str, AuthConfig | None],
                 buckets: BucketStore | None = None,
                 previous: GatewayAuth | None = None) -> None:
        self.default = default or AuthConfig()
        self.buckets: BucketStore = buckets or (previous.buckets if previous
                                                else LocalBuckets())
        self.concurrency: Concurrency = previous.concurrency if previous else Concurrency()
        self.outage: StoreOutage = previous.outage if previous else StoreOutage()
        self._jwks: dict[str, JwksSource] = {}
        self.tenants = {name: self._build(name, override)
                        for name, override in tenants.items()}
        # Who may read /readyz and /metrics on the main listener (see admit_admin).
        self.admin = self._build("(admin)", None) if self.default.authenticates else None

    @property
    def authenticates(self) -> bool:
        """Whether any tenant (or the gateway) tells who calls."""
        return any(t.config.authenticates for t in self.tenants.values())

    async def admit_admin(self, headers: Headers, peer_cert: PeerCert) -> None:
        """Whether the caller may read /readyz and /metrics on the main listener: they say
        which tenants exist and how busy each is, so where anyone authenticates, only a
        credential the gateway-wide `auth` accepts whose principal is bound to no tenant
        (it may call every tenant the gateway-wide settings serve). A tenant's own
        credential, or one bound to some tenants, is refused (403); with no gateway-wide
        credentials at all, everyone is (the admin listener is the way). Raises
        UnauthenticatedError or PermissionDeniedError (README "Who may read /metrics and
        /readyz")."""
        if not self.authenticates:
            return  # nobody is told apart: the endpoints are as open as the calls
        if self.admin is None:
            raise permission_denied("the admin endpoints are served on listen.admin, or "
                                    "to a gateway-wide credential", None)
        authenticator = self.admin.authenticator
        principal = await authenticator.authenticate(headers, peer_cert)
        if principal is None:
            raise unauthenticated("missing", "the admin endpoints need a credential",
                                  authenticator.schemes, self.admin.config.realm)
        if principal.tenants is not None:
            raise permission_denied(f"principal {principal.name!r} is bound to tenants: "
                                    "the admin endpoints are not for it", None)

    @property
    def enabled(self) -> bool:
        return any(t.config.authenticates or t.config.rate_limits or t.config.allow
                   for t in self.tenants.values())

    async def prime(self) -> None:
        """Load every JWK set once at start (JwksError for an unusable file)."""
        for source in self._jwks.values():
            await source.prime()

    def for_tenant(self, name: str) -> TenantAuth:
        return self.tenants[name]

    def _source(self, config: JwtConfig) -> JwksSource:
        key = config.model_dump_json()
        if key not in self._jwks:
            self._jwks[key] = JwksSource(config)
        return self._jwks[key]

    def _build(self, tenant: str, override: AuthConfig | None) -> TenantAuth:
        config = effective(self.default, override)
        if config.required and not config.authenticates:
            raise ValueError(f"tenant {tenant}: auth.required needs api_keys, jwt or mtls")
        own = override.model_fields_set if override is not None else set()

        def bound(field: str) -> str | None:
            # Credentials a tenant configures itself are good for that tenant only.
            return tenant if field in own else None

        keys = ApiKeys(config.api_keys, bound("api_keys")) if config.api_keys else None
        verifier = (JwtVerifier(config.jwt, self._source(config.jwt), bound("jwt"))
                    if config.jwt is not None else None)
        authenticator = Authenticator(config, api_keys=keys, jwt=verifier, mtls=config.mtls,
                                      bound_tenant=bound("mtls"))
        return TenantAuth(
            tenant, config, authenticator, Authorizer(tenant, config.allow),
            TrafficLimits(tenant, config.rate_limits, self.buckets, self.concurrency,
                          self.outage),
            BackendCredentials(config.backend_auth, authenticator.credential_headers, tenant))
