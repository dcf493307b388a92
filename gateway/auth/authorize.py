"""What a caller may do on a tenant: its `allow` rules (principals, scopes, operations by
their canonical v1.0 names), after the tenant binding — a principal bound to tenant A
never calls tenant B, whatever the rules say."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.auth.principal import Principal, permission_denied
from gateway.config.auth import AllowRule

ANYONE = "*"


def _who(principal: Principal | None) -> str:
    return "an anonymous caller" if principal is None else f"principal {principal.name!r}"


def rule_matches(rule: AllowRule, principal: Principal | None, operation: str) -> bool:
    if rule.principals is None:
        if principal is None:
            return False
    elif ANYONE not in rule.principals and (principal is None
                                            or principal.name not in rule.principals):
        return False
    if rule.scopes and (principal is None or not set(rule.scopes) <= principal.scopes):
        return False
    allowed = rule.allowed_operations()
    return allowed is None or operation in allowed


class Authorizer:
    """One tenant's rules; ``rules`` None allows every caller authentication let through."""

    def __init__(self, tenant: str, rules: Sequence[AllowRule] | None) -> None:
        self.tenant = tenant
        self.rules = None if rules is None else list(rules)

    def authorize(self, principal: Principal | None, tenant: str, operation: str) -> None:
        """Raise PermissionDeniedError unless ``principal`` may call ``operation`` on
        ``tenant`` (which must be this authorizer's tenant)."""
        if tenant != self.tenant:
            raise permission_denied(f"{_who(principal)} may not call tenant {tenant!r} "
                                    f"through tenant {self.tenant!r}'s rules", tenant)
        if principal is not None and principal.tenants is not None \
                and tenant not in principal.tenants:
            raise permission_denied(f"{_who(principal)} may not call tenant {tenant!r}",
                                    tenant)
        if self.rules is None:
            return
        if any(rule_matches(rule, principal, operation) for rule in self.rules):
            return
        raise permission_denied(f"{_who(principal)} may not call {operation} on tenant "
                                f"{tenant!r}", tenant)
