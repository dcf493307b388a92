"""`a2a-gateway serve` under cProfile, timed in CPU time (used by bench/hotspots.py).

    python -m bench.profiled_gateway STATS_FILE CONFIG [cpu|wall]

CPU time (the default) keeps the profile about the gateway's own work: on a busy
machine a wall-clock profile also charges a function for the time the process waited
for a core. The stats are written when the gateway exits (SIGTERM).
"""

from __future__ import annotations

import cProfile
import sys
import time

from gateway.cli import main as gateway_main


def main() -> int:
    stats_file, config = sys.argv[1], sys.argv[2]
    timer = time.process_time if (sys.argv[3:] or ["cpu"])[0] == "cpu" else time.perf_counter
    profiler = cProfile.Profile(timer)
    profiler.enable()
    try:
        code = gateway_main(["serve", "--config", config])
    finally:
        profiler.disable()
        profiler.dump_stats(stats_file)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
