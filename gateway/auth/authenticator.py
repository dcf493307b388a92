"""Who is calling: the credential in the headers (gRPC metadata) — a JWT bearer token or
an API key — or else the verified client certificate. Pure of aiohttp and grpc: every
ingress passes a plain mapping of headers and the peer certificate it has."""

from __future__ import annotations

from gateway.auth.apikeys import ApiKeys
from gateway.auth.jwks import JwksSource
from gateway.auth.jwt_bearer import JwtVerifier, TokenRefused, looks_like_jwt
from gateway.auth.mtls import PeerCert, cert_principal
from gateway.auth.principal import Headers, Principal, lower_headers, unauthenticated
from gateway.config.auth import AuthConfig, MtlsConfig


class Authenticator:
    """One tenant's (or the gateway's) way of telling who calls."""

    def __init__(self, config: AuthConfig, *, api_keys: ApiKeys | None = None,
                 jwt: JwtVerifier | None = None, mtls: MtlsConfig | None = None,
                 bound_tenant: str | None = None) -> None:
        self.config = config
        self.api_keys = api_keys
        self.jwt = jwt
        self.mtls = mtls
        self._bound = bound_tenant
        schemes = []
        if jwt is not None or (api_keys is not None and "bearer" in
                               {s.lower() for s in api_keys.config.authorization_schemes}):
            schemes.append("Bearer")
        if api_keys is not None and "apikey" in {s.lower() for s in
                                                 api_keys.config.authorization_schemes}:
            schemes.append("ApiKey")
        self.schemes: tuple[str, ...] = tuple(schemes) or ("Bearer",)

    @classmethod
    def from_config(cls, config: AuthConfig, bound_tenant: str | None = None,
                    jwks: JwksSource | None = None) -> Authenticator:
        """Build from config; reads key files / variables now (SecretError if absent)."""
        keys = ApiKeys(config.api_keys, bound_tenant) if config.api_keys else None
        verifier = None
        if config.jwt is not None:
            verifier = JwtVerifier(config.jwt, jwks or JwksSource(config.jwt), bound_tenant)
        return cls(config, api_keys=keys, jwt=verifier, mtls=config.mtls,
                   bound_tenant=bound_tenant)

    @property
    def credential_headers(self) -> frozenset[str]:
        """Header names (lowercase) that carry credentials this authenticator consumes:
        they are not forwarded to the backend unless configured so."""
        names = set()
        if self.jwt is not None or self.api_keys is not None:
            names.add("authorization")
        if self.api_keys is not None and self.api_keys.config.header is not None:
            names.add(self.api_keys.config.header)
        return frozenset(names)

    def _refuse(self, failure: str, message: str) -> Exception:
        return unauthenticated(failure, message, self.schemes, self.config.realm)

    async def authenticate(self, headers: Headers, peer_cert: PeerCert = None,
                           ) -> Principal | None:
        """The caller, or None for an anonymous call where `required` is false. Raises
        UnauthenticatedError (with a WWW-Authenticate challenge in its metadata) when a
        credential is presented and refused, or none is and one is required."""
        h = lower_headers(headers)
        authorization = h.get("authorization", "").strip()
        scheme, _, value = authorization.partition(" ")
        value = value.strip()
        is_bearer = scheme.lower() == "bearer"
        if self.jwt is not None and is_bearer and value and (
                self.api_keys is None or looks_like_jwt(value)):
            try:
                return await self.jwt.verify(value)
            except TokenRefused as no:
                raise self._refuse(no.failure, no.message) from None
        if self.api_keys is not None:
            presented = self.api_keys.presented(h)
            if presented is not None:
                principal = self.api_keys.check(presented[1])
                if principal is None:
                    raise self._refuse("invalid_key", "the API key is not valid")
                return principal
        if authorization and (self.jwt is not None or self.api_keys is not None):
            if not value:
                raise self._refuse("malformed", "the Authorization header has no credential")
            raise self._refuse("malformed", "the Authorization scheme is not accepted "
                               f"(accepted: {', '.join(self.schemes)})")
        if self.mtls is not None:
            principal = cert_principal(self.mtls, peer_cert, self._bound)
            if principal is not None:
                return principal
        if self.config.required:
            raise self._refuse("missing", "authentication is required: no credential was "
                               "presented")
        return None
