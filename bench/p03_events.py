"""Cost of translating one v0.3 gRPC stream event (not part of `make bench`):

    .venv/bin/python -m bench.p03_events [--tree DIR]

Every event of a v0.3 gRPC stream goes through `stream_response_to_p10` (a v0.3
backend) or `stream_response_to_p03` (a v0.3 client). Neither bench/crossings.py nor
bench/instructions_per_event.py crosses that code, so this measures it alone, on a
typical stream (a task, a working status with a one-part message, an artifact chunk, the
final status): Python calls per event (sys.setprofile) and instructions per event
(`valgrind --tool=callgrind`, two runs of different lengths, the difference divided by
the difference in events, so start-up cancels out). ``--tree DIR`` measures another source
tree (`git archive <commit> | tar -x -C DIR`) for a before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_WORK = r"""
import sys
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from translators.loss import LossReport
from translators.p03 import objects

def events():
    msg = v03.Message(message_id="m1", context_id="c1", task_id="t1", role=2,
                      content=[v03.Part(text="working on it")])
    task = v03.Task(id="t1", context_id="c1", history=[msg],
                    status=v03.TaskStatus(state=1))
    working = v03.TaskStatusUpdateEvent(task_id="t1", context_id="c1",
                                        status=v03.TaskStatus(state=2, update=msg))
    chunk = v03.TaskArtifactUpdateEvent(task_id="t1", context_id="c1", append=True,
        artifact=v03.Artifact(artifact_id="a1", parts=[v03.Part(text="chunk")]))
    done = v03.TaskStatusUpdateEvent(task_id="t1", context_id="c1", final=True,
                                     status=v03.TaskStatus(state=3))
    return [v03.StreamResponse(task=task), v03.StreamResponse(msg=msg),
            v03.StreamResponse(status_update=working),
            v03.StreamResponse(artifact_update=chunk), v03.StreamResponse(status_update=done)]

EVENTS = events()
P10 = [objects.stream_response_to_p10(e, "", LossReport()) for e in EVENTS]

def run(rounds):
    for _ in range(rounds):
        for e in EVENTS:
            objects.stream_response_to_p10(e, "", LossReport())
        for i, e in enumerate(P10):
            objects.stream_response_to_p03(e, i == len(P10) - 1, "", LossReport())

if sys.argv[1] == "calls":
    calls = 0
    def prof(frame, event, arg):
        global calls
        if event == "call" and "/translators/" in frame.f_code.co_filename:
            calls += 1
    sys.setprofile(prof)
    run(1)
    sys.setprofile(None)
    print(calls)
else:
    run(int(sys.argv[1]))
"""

_EVENTS_PER_ROUND = 10  # 5 events each way


def _run(tree: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, "-c", _WORK, *args], cwd=tree, env=env,
                          check=True, capture_output=True, text=True).stdout


def _instructions(tree: Path, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", _WORK, str(rounds)], cwd=tree, env=env,
                       check=True, capture_output=True)
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError("no callgrind totals")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path.cwd())
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args(argv)
    calls = int(_run(args.tree, "calls")) / _EVENTS_PER_ROUND
    few, many = (_instructions(args.tree, n) for n in (args.rounds // 4, args.rounds))
    per_event = (many - few) / ((args.rounds - args.rounds // 4) * _EVENTS_PER_ROUND)
    print(json.dumps({"tree": str(args.tree), "python_calls_per_event": calls,
                      "instructions_per_event": round(per_event)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
