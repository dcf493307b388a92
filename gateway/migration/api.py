"""What the admin API and the CLI need of migration mode (docs/migration.md, "The report"):
the tenants with a `migration` block, a tenant's report (its JSON shape: the docs), and
moving the candidate's share by hand. The gateway's migration core provides it as
``Gateway.migration``; the admin routes (gateway/server/admin_migration.py) read only this."""

from __future__ import annotations

from typing import Any, Literal, Protocol

Move = Literal["promote", "rollback"]
MOVES: tuple[Move, ...] = ("promote", "rollback")

# The disagreements a report carries: by default, and at most (a disagreement holds three
# JSON views, each up to the core's truncation: 200 of them is a page of some megabytes).
LAST_DEFAULT = 20
LAST_MAX = 200


class MigrationAdmin(Protocol):
    def tenants(self) -> list[str]:
        """The tenants with a migration block, in the config's order."""
        ...

    async def report(self, tenant: str, last: int = LAST_DEFAULT) -> dict[str, Any] | None:
        """The tenant's report with its ``last`` disagreements; None when there is no such
        tenant or it has no migration."""
        ...

    async def move(self, tenant: str, action: Move, by: str) -> dict[str, Any] | None:
        """Move the candidate's share by hand (how far each action moves it is the core's
        rule), recorded as an event ``by`` whom; the new report, or None as ``report``."""
        ...
