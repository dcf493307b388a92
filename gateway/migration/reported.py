"""One tenant's migration report (the admin API, the CLI, the page): what a
TenantMigration (gateway/migration/tenant.py) holds, as one JSON object."""

from __future__ import annotations

from typing import Any, Protocol

from gateway.config.migration import MigrationConfig
from gateway.migration.control import Control, configured_share
from gateway.migration.stats import TenantStats
from gateway.routing.tenants import TenantRoute


class Reported(Protocol):
    """What the report reads of a tenant's migration."""

    name: str
    config: MigrationConfig
    control: Control
    stats: TenantStats
    primary: TenantRoute
    candidate: TenantRoute
    shadowing: bool


def report_of(m: Reported, last: int) -> dict[str, Any]:
    """``m``'s report, with its ``last`` disagreements (newest first)."""
    rules = m.config.rollback
    rolled_back_by = m.control.rolled_back_by()
    return {
        "tenant": m.name, "mode": m.config.mode, "share": m.control.share,
        "configured_share": configured_share(m.config),
        "primary": {"label": _label(m.primary)},
        "candidate": {"label": _label(m.candidate)},
        "arms": {arm: counts.view() for arm, counts in m.stats.arms.items()},
        "shadow": {**m.stats.shadow.view(), "active": m.shadowing,
                   "operations": list(m.config.shadow.operations),
                   "aa": m.config.shadow.aa},
        "rollback": {"enabled": rules.enabled, "window_seconds": rules.window,
                     "min_calls": rules.min_calls, "max_error_rate": rules.max_error_rate,
                     "max_timeout_rate": rules.max_timeout_rate,
                     "max_diff_rate": rules.max_diff_rate,
                     "rolled_back": rolled_back_by is not None,
                     "rolled_back_by": rolled_back_by,
                     **m.stats.window_view()},
        "events": list(m.control.events),
        "disagreements": list(m.stats.disagreements)[:last],
    }


def _label(route: TenantRoute) -> str:
    config = route.config
    return route.label or (f"{config.binding}/{config.version}" if config.url
                           else "discovered from its card")
