"""Cold starts of the default configuration with several workers (issue 27, README
"Workers"): each in a fresh folder, so every start creates the SQLite state file while
its workers open it at once. Every start must come up: both workers ready, /readyz 200,
SIGTERM exits 0.

A full start costs ~2.3 s of CPU (a supervisor and two workers importing the gateway):
the 50 starts, three at a time, take ~70 s on the idle 2-core machine
(A2A_TEST_COLD_STARTS sets another count). The race itself — processes opening one fresh
file at one moment, which is what failed — is also run 100 times without the rest of a
start (test_sqlite_store.py::test_processes_opening_a_fresh_file_at_once_all_succeed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from tests.support.helpers import ROOT, free_port, gateway_cmd

COLD_STARTS = int(os.environ.get("A2A_TEST_COLD_STARTS", "50"))
AT_ONCE = 3
START_TIMEOUT = 60.0  # seconds for one start on a loaded machine


def _default_config(folder: Path) -> Path:
    """config/gateway.yaml as shipped (state: the default relative path, so in the fresh
    folder), on free ports, with two workers (the default on a 2-CPU machine)."""
    config = yaml.safe_load((ROOT / "config" / "gateway.yaml").read_text())
    http, grpc, demo = free_port(), free_port(), free_port()
    config["listen"] = {"http": f"127.0.0.1:{http}", "grpc": f"127.0.0.1:{grpc}"}
    config["public_url"] = f"http://127.0.0.1:{http}"
    config["demo_agent"] = {"listen": f"127.0.0.1:{demo}"}
    config["tenants"]["demo"]["backend"]["url"] = f"http://127.0.0.1:{demo}/"
    config["workers"] = 2
    config["log"] = {**config.get("log", {}), "format": "json"}  # read below, line by line
    assert "state" not in config
    path = folder / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return int(resp.status)
    except OSError:
        return 0


def _start_once(folder: Path) -> str:
    """One start: "ready", or what went wrong with the log's tail."""
    folder.mkdir()
    config = _default_config(folder)
    port = int(yaml.safe_load(config.read_text())["listen"]["http"].rsplit(":", 1)[1])
    log_path = folder / "gateway.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(gateway_cmd(config), cwd=folder, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            events = [json.loads(line).get("event") for line in
                      log_path.read_text().splitlines() if line.startswith("{")]
            if "workers ready" in events and _readyz(port) == 200:
                break
            time.sleep(0.05)
        else:
            return f"not ready (exit {proc.poll()}): {log_path.read_text()[-1500:]}"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        if code != 0:
            return f"exit {code} after SIGTERM: {log_path.read_text()[-1500:]}"
        if not (folder / "a2a-gateway-state.db").exists():
            return "no state file in the folder"
        return "ready"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_default_configuration_starts_every_time(tmp_path: Path) -> None:
    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(_start_once, (tmp_path / f"start{i}"
                                              for i in range(COLD_STARTS))))
    failed = [o for o in outcomes if o != "ready"]
    assert failed == [], f"{len(failed)} of {COLD_STARTS} starts failed; first: {failed[0]}"
