"""A real nginx on a loopback port as the one address in front of several gateway
replicas (round robin, a replica that refuses the connection skipped), proxying SSE as a
production balancer does (no buffering). `make nginx` installs Debian's nginx-light;
A2A_TEST_NGINX names another binary. Its config, pid, logs and temp paths are in a
directory of its own, removed after."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import free_port, wait_for_port


def nginx_binary() -> str:
    path = os.environ.get("A2A_TEST_NGINX") or shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not path:
        pytest.fail("nginx not found: run `make nginx` (root), or set A2A_TEST_NGINX to "
                    "an nginx binary")
    return path


def balancer_conf(prefix: Path, port: int, upstreams: list[int]) -> str:
    """Round robin over ``upstreams``. `max_fails=0`: a replica that refused a connection
    (stopped) is tried again at the next request, not set aside for `fail_timeout` (it
    may be back: a rolling restart). A request whose connection was refused goes to the
    next replica (`proxy_next_upstream error`, the default; nothing was sent yet). A new
    upstream connection per request (no `keepalive`): a reconnecting client never rides
    a connection of a replica that is shutting down."""
    tmp = prefix / "tmp"
    tmp.mkdir(mode=0o777)
    tmp.chmod(0o777)  # the worker may run as nobody
    temp_paths = "\n".join(f"    {kind}_temp_path {tmp}/{kind};"
                           for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in upstreams)
    return f"""daemon off;
master_process on;
worker_processes 1;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp_paths}
    upstream gateways {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://gateways;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 120s;
        }}
    }}
}}
"""


@contextlib.contextmanager
def nginx_balancer(upstreams: list[int], log: Path) -> Iterator[int]:
    """nginx balancing over the 127.0.0.1 ``upstreams`` for the block; yields its port.
    Its error log is copied to ``log`` at the end (what a failing test shows)."""
    binary = nginx_binary()
    prefix = Path(tempfile.mkdtemp(prefix="a2a-nginx-"))
    prefix.chmod(0o755)
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(balancer_conf(prefix, port, upstreams))
    with open(prefix / "startup.log", "wb") as out:
        proc = subprocess.Popen([binary, "-p", f"{prefix}/", "-e", str(prefix / "startup.log"),
                                 "-c", str(conf)], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 30, proc)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for name in ("startup.log", "error.log"):
            with contextlib.suppress(OSError), open(log, "ab") as out:
                out.write((prefix / name).read_bytes())
        shutil.rmtree(prefix, ignore_errors=True)
