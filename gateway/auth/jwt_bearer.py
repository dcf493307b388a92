"""JWT bearer tokens, verified by PyJWT against the issuer's JWK set: an algorithm from the
allow-list that fits the key's type (no `none`, no HMAC with a public key), the
signature, `exp`/`nbf` with leeway, the issuer and the audience."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jwt

from gateway.auth.jwks import JwksSource, SigningKey
from gateway.auth.principal import Principal
from gateway.config.auth import JwtConfig


class TokenRefused(Exception):
    """Why a token was refused: ``failure`` is a short code, the message says it in words
    and never holds the token or a claim's value."""

    def __init__(self, failure: str, message: str) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message


_FAMILY = {"RSA": ("RS", "PS"), "EC": ("ES",), "OKP": ("EdDSA",)}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def algorithm_fits_key(alg: str, key: SigningKey) -> bool:
    """Whether ``alg`` may verify with ``key``: the key's own `alg` when it names one, else
    its type's family (RSA: RS/PS, EC: ES on its curve, OKP: EdDSA). HMAC never fits."""
    if key.alg is not None and key.alg != alg:
        return False
    if not alg.startswith(_FAMILY.get(key.kty, ())):
        return False
    curve = _CURVE.get(alg)
    return curve is None or key.crv == curve


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2


class JwtVerifier:
    def __init__(self, config: JwtConfig, keys: JwksSource,
                 bound_tenant: str | None = None) -> None:
        self.config = config
        self.keys = keys
        self._bound = bound_tenant

    async def verify(self, token: str) -> Principal:
        cfg = self.config
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            # Not only DecodeError: PyJWT also refuses a non-string `kid` and an unknown
            # `crit` extension here, with the base InvalidTokenError. Any token PyJWT will
            # not read is the caller's mistake (401), never ours.
            raise TokenRefused("malformed", "the bearer token is not a well-formed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in cfg.algorithms:
            raise TokenRefused("algorithm_not_allowed", "the token's signature algorithm is "
                               "not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("malformed", "the token's key id is not a string")
        key = await self.keys.key_for(kid)
        if key is None:
            raise TokenRefused("unknown_key", "the token is signed with an unknown key id")
        if not algorithm_fits_key(alg, key):
            raise TokenRefused("algorithm_not_allowed", "the token's signature algorithm "
                               "does not fit the issuer's key")
        claims = self._decode(token, key, alg)
        return self._principal(claims)

    def _decode(self, token: str, key: SigningKey, alg: str) -> dict[str, Any]:
        cfg = self.config
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key.jwk.key, algorithms=[alg], audience=cfg.audience, issuer=cfg.issuer,
                leeway=cfg.leeway, options={"require": cfg.require, "verify_signature": True})
        except jwt.InvalidSignatureError:
            raise TokenRefused("bad_signature", "the token's signature does not verify") from None
        except jwt.ExpiredSignatureError:
            raise TokenRefused("expired", "the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("not_yet_valid", "the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("wrong_audience", "the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("wrong_issuer", "the token is from another issuer") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused("missing_claim", f"the token lacks the {exc.claim} claim") \
                from None
        except jwt.InvalidAlgorithmError:
            raise TokenRefused("algorithm_not_allowed", "the token's signature algorithm is "
                               "not allowed") from None
        except (jwt.InvalidKeyError, TypeError):  # a key that does not fit the algorithm
            raise TokenRefused("algorithm_not_allowed", "the token's signature algorithm "
                               "does not fit the issuer's key") from None
        except jwt.InvalidIssuedAtError:
            raise TokenRefused("malformed", "the token's iat claim is invalid") from None
        except jwt.DecodeError:
            raise TokenRefused("malformed", "the bearer token is not a well-formed JWT") \
                from None
        except jwt.PyJWTError:  # every other refusal PyJWT has (and may add)
            raise TokenRefused("invalid", "the token is not valid") from None
        return claims

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        cfg = self.config
        name = claims.get(cfg.principal_claim)
        if not isinstance(name, str) or not name:
            raise TokenRefused("missing_claim", f"the token lacks the {cfg.principal_claim} "
                               f"claim")
        tenants: frozenset[str] | None = (frozenset({self._bound}) if self._bound is not None
                                          else None)
        if cfg.tenants_claim is not None:
            claimed = frozenset(_strings(claims.get(cfg.tenants_claim)))
            tenants = claimed if tenants is None else tenants & claimed
        return Principal(name, "jwt", frozenset(self._scopes(claims)), tenants, dict(claims))

    def _scopes(self, claims: Mapping[str, Any]) -> list[str]:
        if self.config.scopes_claim is not None:
            return _strings(claims.get(self.config.scopes_claim))
        if claims.get("scope") is not None:
            return _strings(claims["scope"])
        return _strings(claims.get("scp"))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
