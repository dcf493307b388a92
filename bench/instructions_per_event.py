"""Instructions per streamed SSE event of the gateway, counted by valgrind (not part of
`make bench`).

    .venv/bin/python -m bench.instructions_per_event [--streams 8] [--baseline DIR ...]

The stream scenario of bench/peers.py (peer `gw-03-10`: a v0.3 JSON-RPC `message/stream`
to the gateway, translated from the v1.0 stub's stream of bench.nginx.STREAM_EVENTS
events), measured as bench/instructions_per_call.py measures calls: the gateway runs under
`valgrind --tool=callgrind`, its counters are zeroed after a warm-up, a fixed number of
streams runs over one connection, and the counters are dumped: instructions ÷ events
delivered (a stream's setup included, spread over its events).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.instructions_per_call import Starts, _control, _totals, add_gateways, start_all
from bench.peers import Run, _load, _spec
from bench.procs import Processes, free_port


def _measure(pid: int, out: Path, port: int, streams: int) -> tuple[int, int]:
    """(events, instructions) of ``streams`` streams one after another, after a warm-up.
    One connection and a count, not a time: every stream the gateway serves while
    counted is a counted stream (with several connections, the ones still open when the
    time is up would add instructions and no events)."""
    def load(count: int) -> dict[str, object]:
        spec = _spec(Run("stream", "gw-03-10", "asyncio"), port, {})
        spec.update(warmup=0.0, duration=600.0, connections=1, max_requests=count)
        return _load(spec, cores=None)

    load(2)
    _control(pid, "-z")
    result = load(streams)
    time.sleep(1.5)  # the streams in flight at the end finish
    began = time.time()
    _control(pid, "-d")
    if result["errors"]:
        raise RuntimeError(f"{result['errors']} errors: {result['error_sample']}")
    return int(str(result["events"])), _totals(out, pid, began - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions_per_event",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--baseline", action="append", default=[], type=Path)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions_per_event: needs valgrind", file=sys.stderr)
        return 2
    logs = Path(tempfile.mkdtemp(prefix="a2a-instructions-"))
    out = logs / "callgrind.out"
    per_event: dict[str, float] = {}
    with Processes(logs) as procs:
        echo = free_port()
        procs.start("echo-stub", [sys.executable, "-m", "bench.echo_stub", "--port",
                                  str(echo)], echo)
        trees: list[tuple[str, Path | None]] = [("gw", None)]
        trees += [(f"base{i}", d) for i, d in enumerate(args.baseline)]
        starts: Starts = {}
        add_gateways(starts, out, logs, trees, echo, echo)
        hops = start_all(procs, starts)
        for name, (pid, port) in hops.items():
            events, instructions = _measure(pid, out, port, args.streams)
            per_event[name] = instructions / events
            print(f"{name:<8} {events:7d} events  {instructions / events / 1e3:8.1f} "
                  f"k instructions per event", flush=True)
    print(json.dumps(per_event))
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
