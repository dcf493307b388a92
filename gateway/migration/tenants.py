"""The tenants of one config in migration mode, and what the admin API asks of them
(gateway/server/admin_migration.py). The stage that sends each call to its agent is in
gateway/pipeline/standard.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.config.models import BackendConfig, GatewayConfig
from gateway.migration.api import Move
from gateway.migration.control import Control
from gateway.migration.falling_back import Retarget
from gateway.migration.owners import owner_prefix
from gateway.migration.sticky import PRIMARY
from gateway.migration.tenant import Conversations, TenantMigration
from gateway.observability.metrics import MIGRATION_SHARE
from gateway.routing.tenants import TenantRoute
from gateway.state import KeptOwner, Store

RouteFactory = Callable[[str, BackendConfig], TenantRoute]


class Migrations:
    """The tenants of one config that have a migration (mode other than `off`); what
    they counted is carried over from the config this one replaced."""

    def __init__(self, config: GatewayConfig, routes: dict[str, TenantRoute],
                 make_route: RouteFactory, store: Store | None,
                 previous: Migrations | None = None, retarget: Retarget | None = None,
                 waits: bool = True, conversations: Conversations | None = None,
                 resumes: bool = False) -> None:
        """``retarget``: the push relay's, for a call that falls back to the primary;
        ``waits``: other processes read ``store`` (the task index's rule);
        ``conversations``: the task index (the conversations under way before);
        ``resumes``: streams resume from the journal."""
        self._previous = previous  # until this config serves (adopt)
        self.active: dict[str, TenantMigration] = {}
        self.configured: list[str] = []  # every tenant with a migration block
        self._off: list[Control] = []  # those in mode `off` (their moves end: adopt)
        # Each tenant in `off` that had a migration before: what it counted and learned,
        # carried to the config that turns it on again (a reload through `off`).
        self._resting: dict[str, TenantMigration] = {}
        for name, tenant in config.tenants.items():
            m = tenant.migration
            if m is None:
                continue
            self.configured.append(name)
            before = previous.carried(name) if previous is not None else None
            if m.mode == "off":
                self._off.append(Control(name, m, store))
                if before is not None:
                    self._resting[name] = before
                continue
            self.active[name] = TenantMigration(
                name, m, routes[name], make_route(name, m.candidate), store, before,
                retarget, waits, conversations, resumes)

    def carried(self, tenant: str) -> TenantMigration | None:
        """What ``tenant``'s migration under this config counted and learned (its own,
        or the one it rested in `off` with), for the config that replaces this one."""
        return self.active.get(tenant) or self._resting.get(tenant)

    async def adopt(self) -> None:
        """This config's modes and shares made the store's (Control.adopt), before it
        serves: a move made under another config ends here, in every process. Then it
        serves: the share gauge says its shares (0 for a tenant in `off` or no longer
        migrating), no longer the config's it replaces."""
        for control in [*(m.control for m in self.active.values()), *self._off]:
            await control.adopt()
        before, self._previous = self._previous, None
        if before is not None:
            for m in [*before.active.values(), *before._resting.values()]:
                m.serving(False)
            for name in {*before.active, *before._resting} - set(self.active):
                MIGRATION_SHARE.labels(name).set(0)
        for control in self._off:
            MIGRATION_SHARE.labels(control.tenant).set(0)
        for m in self.active.values():
            m.serving(True)

    def kept_owners(self) -> dict[str, KeptOwner]:
        """What pruning the task index keeps of each tenant's conversations and tasks,
        which are followed by the tasks the index holds of them
        (TenantMigration.follows_index): each conversation bound to the agent recorded
        with its task (the primary where none was), each of the candidate's tasks to the
        candidate (a live binding stays)."""
        return {name: KeptOwner(owner_prefix(name, "context"), PRIMARY, m.config.owner_ttl,
                                tasks=owner_prefix(name, "task"))
                for name, m in self.active.items() if m.follows_index}

    def merged(self, tenant: str) -> bool:
        """Whether ListTasks of ``tenant`` is answered from the task index (both agents'
        tasks)."""
        return tenant in self.active

    # ------------------------------------------------------------ the admin API

    def tenants(self) -> list[str]:
        return list(self.configured)

    async def report(self, tenant: str, last: int = 20) -> dict[str, Any] | None:
        m = self.active.get(tenant)
        if m is None:
            return None if tenant not in self.configured else {"tenant": tenant,
                                                                "mode": "off"}
        return await m.report(last)

    async def move(self, tenant: str, action: Move, by: str) -> dict[str, Any] | None:
        m = self.active.get(tenant)
        if m is None:
            return None
        await m.move(action, by, f"{action} by hand ({by})")
        return await m.report(20)

    async def close(self) -> None:
        for m in self.active.values():
            await m.close()
            await m.candidate.close()
