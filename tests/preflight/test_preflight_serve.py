"""What only `serve` can find: a listen address already in use, a file gone between
preflight and its opening. One line naming the YAML path, exit 2, no traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.preflight.preflight_support import full_config, make_missing
from tests.support.helpers import VENV_BIN, free_port, v03, write_config


def _not_json(stderr: str) -> list[str]:
    """The lines that are not the JSON log lines of the start."""
    out = []
    for line in stderr.splitlines():
        try:
            json.loads(line)
        except ValueError:
            out.append(line)
    return out


def _serve_with_port_taken(config: dict[str, Any], port: int,
                           tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`serve` of ``config`` while something else listens on ``port``."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        return subprocess.run(
            [str(VENV_BIN / "a2a-gateway"), "serve", "--config",
             str(write_config(tmp_path / "gw.yaml", config))],
            capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("option", ["listen.http", "listen.grpc", "listen.admin",
                                    "demo_agent.listen"])
def test_serve_with_an_address_in_use(option: str, tmp_path: Path) -> None:
    ports = {name: free_port() for name in ("http", "grpc", "admin", "demo")}
    config = {"listen": {"http": f"127.0.0.1:{ports['http']}",
                         "grpc": f"127.0.0.1:{ports['grpc']}",
                         "admin": f"127.0.0.1:{ports['admin']}"},
              "demo_agent": {"listen": f"127.0.0.1:{ports['demo']}"},
              "tenants": {"d": v03(f"http://127.0.0.1:{ports['demo']}/")}}
    taken = ports["demo" if option == "demo_agent.listen" else option.partition(".")[2]]
    done = _serve_with_port_taken(config, taken, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = _not_json(done.stderr)
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"a2a-gateway: {option}: cannot bind 127.0.0.1:{taken}: "), lines
    if option != "listen.grpc":  # gRPC names no errno
        assert lines[0].endswith("Address already in use"), lines


# `serve` itself, without the preflight the command runs first: as if the file went
# away between the check and its opening.
_SERVE_WITHOUT_PREFLIGHT = """
import asyncio, sys
from gateway.server.app import serve
from gateway.config.models import load_config
from gateway.preflight import ConfigProblems
try:
    asyncio.run(serve(load_config(sys.argv[1])))
except ConfigProblems as exc:
    print("\\n".join(exc.problems))
    sys.exit(3)
"""


@pytest.mark.parametrize("option", ["auth.server_tls.key_file", "auth.jwt.jwks_file",
                                    "tenants.b.auth.backend_auth.api_key.file"])
def test_a_file_gone_after_preflight_is_named_by_its_path(option: str,
                                                          tmp_path: Path) -> None:
    config, files = full_config(tmp_path)
    config["listen"] = {"http": f"127.0.0.1:{free_port()}"}
    path = write_config(tmp_path / "gw.yaml", config)
    make_missing(files[option])
    done = subprocess.run([sys.executable, "-c", _SERVE_WITHOUT_PREFLIGHT, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    # What the start had opened is closed: no unclosed session, no relay worker left to
    # read the store the stop closed (both were error lines here).
    assert '"level":"error"' not in done.stderr, done.stderr
    secret = "secret file " if "backend_auth" in option else ""
    assert done.stdout.splitlines() == [
        f"{option}: cannot read {secret}{files[option]}: No such file or directory"]


def test_a_worker_that_cannot_bind_says_so_in_one_line(tmp_path: Path) -> None:
    """With workers, worker 0 runs the demo agent: its port taken, that worker answers
    with the one line and exit 2, and so does the gateway (no restart loop)."""
    demo, port = free_port(), free_port()
    config = {"listen": {"http": f"127.0.0.1:{port}"}, "workers": 2,
              "demo_agent": {"listen": f"127.0.0.1:{demo}"},
              "tenants": {"d": v03(f"http://127.0.0.1:{demo}/")}}
    done = _serve_with_port_taken(config, demo, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert _not_json(done.stderr) == [
        f"a2a-gateway: demo_agent.listen: cannot bind 127.0.0.1:{demo}: Address already in use"]
