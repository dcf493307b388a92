"""The directory where workers write their Prometheus values (prometheus_client's
multiprocess mode), owned by the supervisor."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from prometheus_client.multiprocess import mark_process_dead

ENV = "PROMETHEUS_MULTIPROC_DIR"


class MetricsDir:
    """PROMETHEUS_MULTIPROC_DIR when the supervisor's environment names one (emptied of
    an earlier run's files), else a fresh temporary directory removed at the end."""

    def __init__(self) -> None:
        given = os.environ.get(ENV)
        self._owned = not given
        if given:
            self.path = Path(given)
            self.path.mkdir(parents=True, exist_ok=True)
            for stale in self.path.glob("*.db"):
                stale.unlink()
        else:
            self.path = Path(tempfile.mkdtemp(prefix="a2a-gateway-metrics-"))

    def worker_exited(self, pid: int) -> None:
        """Drop the exited worker's live gauges (open streams, connections, slots); its
        counters and histograms stay, so totals do not go back."""
        with contextlib.suppress(OSError):
            mark_process_dead(pid, str(self.path))  # type: ignore[no-untyped-call]

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.path, ignore_errors=True)
