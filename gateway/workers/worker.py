"""The worker's side of `workers: N`: what one worker process is told by its supervisor,
and what it tells back."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerRole:
    """Worker ``index`` of a supervisor (process ``supervisor``), which waits on
    ``ready_fd`` for the worker's listeners to be open."""

    index: int
    ready_fd: int
    supervisor: int

    def follow_supervisor(self) -> None:
        """Stop (SIGTERM, so gracefully) when the supervisor dies, however it dies:
        otherwise an orphaned worker would keep a share of the port."""
        if sys.platform == "linux":
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != self.supervisor:  # it died before the request above
            raise SystemExit(0)

    def ready(self) -> None:
        """Tell the supervisor this worker serves (its listeners are open)."""
        with contextlib.suppress(OSError):
            os.write(self.ready_fd, b"r")
            os.close(self.ready_fd)
