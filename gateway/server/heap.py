"""The cyclic garbage collector, set for a serving process once it has started.

Under load the collector's default cadence (a young collection every 700 net
allocations of containers, and full ones that walk every object of the process) took
about 4% of a worker's CPU, and each full collection held the loop for ~45 ms, the
p99 of a unary call (bench/README.md, "Garbage collection"). What start-up made lives
as long as the process: it is frozen out of the collector's walks, and young
collections come every YOUNG_THRESHOLD allocations. Calls free almost everything they
allocate by reference counting; the collector is left the cycles.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 7000  # net container allocations between young collections


def settle_after_start() -> None:
    """Call once the listeners are open: what is alive then is the process's for good."""
    gc.collect()  # start-up's garbage goes now, not into the frozen heap
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
