"""How many workers `workers: null` means: one per CPU this process may use.

`os.cpu_count()` counts the host's CPUs, which is wrong twice over in production: under
`taskset` or a cpuset only some may be used (the affinity mask says which), and in a
container with a CPU limit (a CFS quota) the host's count would start many workers that
the quota then throttles. So: the affinity mask, capped by the cgroup's quota rounded
down (a worker per whole CPU the quota allows, at least one).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from gateway.config.models import GatewayConfig

_CGROUP = Path("/sys/fs/cgroup")


def quota_cpus(cpu_max: str) -> float | None:
    """CPUs a cgroup v2 `cpu.max` ("<quota> <period>", or "max <period>") allows."""
    quota, _, period = cpu_max.strip().partition(" ")
    if quota == "max" or not quota or not period:
        return None
    return int(quota) / int(period)


def quota_cpus_v1(quota_us: str, period_us: str) -> float | None:
    """CPUs a cgroup v1 CFS quota allows (-1: no limit)."""
    quota = int(quota_us)
    return None if quota <= 0 else quota / int(period_us)


def _own_cgroup_v2(proc_cgroup: str) -> Path | None:
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return _CGROUP / line[3:].lstrip("/")
    return None


def cgroup_cpu_limit() -> float | None:
    """The tightest CPU quota over this process's cgroup and its parents, if any."""
    limits: list[float] = []
    try:
        own = _own_cgroup_v2(Path("/proc/self/cgroup").read_text())
    except OSError:
        own = None
    if own is not None:
        for directory in (own, *own.parents):
            if not directory.is_relative_to(_CGROUP):
                break
            try:
                limit = quota_cpus((directory / "cpu.max").read_text())
            except (OSError, ValueError):
                continue
            if limit is not None:
                limits.append(limit)
    try:
        v1 = quota_cpus_v1((_CGROUP / "cpu" / "cpu.cfs_quota_us").read_text(),
                           (_CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        v1 = None
    if v1 is not None:
        limits.append(v1)
    return min(limits) if limits else None


def available_cpus() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cpus = min(cpus, max(1, math.floor(limit)))
    return max(1, cpus)


def worker_count(config: GatewayConfig) -> tuple[int, str]:
    """The number of worker processes and why that many (for the log)."""
    if config.workers is not None:
        return config.workers, "workers"
    if config.state.backend == "sqlite" and config.state.path == ":memory:":
        return 1, "state.path :memory: serves one process"
    return available_cpus(), "one per available CPU"
