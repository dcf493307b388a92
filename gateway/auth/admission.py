"""Admission: the security policy (gateway/auth) applied to one call, the same way for
all six client dialects — who calls, whether they may, whether they are over a rate, and
which credential the backend gets. The pipeline asks once per call, after routing."""

from __future__ import annotations

from gateway.auth.principal import unauthenticated
from gateway.auth.ratelimit import StoreBuckets
from gateway.auth.service import GatewayAuth, TenantAuth
from gateway.call import Call
from gateway.config.models import GatewayConfig
from gateway.state import Store
from translators.operations import EXTENDED_CARD


def build_auth(config: GatewayConfig, previous: GatewayAuth | None,
               shared: Store | None = None) -> GatewayAuth | None:
    """The policy of ``config``; None when it configures none (nothing to ask per call).
    ``previous``: the policy of the config this one replaces (its buckets carry over);
    ``shared``: the state store, when other processes serve too (the rate buckets live
    there, so that a limit holds across workers and replicas)."""
    tenants = {name: t.auth for name, t in config.tenants.items()}
    if config.auth is None and all(a is None for a in tenants.values()):
        return None
    buckets = StoreBuckets(shared) if shared is not None else None
    return GatewayAuth(config.auth, tenants, buckets=buckets, previous=previous)


async def admit(policy: TenantAuth, call: Call) -> None:
    """Admit ``call`` to its tenant or raise the refusal (UnauthenticatedError,
    PermissionDeniedError, ResourceExhaustedError) its dialect renders; then set the
    credential headers its backend gets."""
    ctx = call.ctx
    if not ctx.facts.internal:
        ctx.principal = await policy.admit(ctx.facts.credentials, ctx.facts.peer_cert, call.op.name)
        if ctx.principal is None and call.op.name == EXTENDED_CARD \
                and policy.config.authenticates:
            # The extended card is for authenticated callers only (spec: the card's
            # capability says it needs authentication).
            schemes = policy.authenticator.schemes
            raise unauthenticated("missing", "the extended agent card needs an "
                                  "authenticated caller", schemes, policy.config.realm)
    ctx.backend_headers = await policy.backend.headers(ctx.backend_headers)
    ctx.gateway_credential = policy.backend.own_headers
