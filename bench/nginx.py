"""nginx for the peer comparison: the fixed-answer stub backend and the plain reverse proxy.

Both run as non-daemon processes (`daemon off; master_process on; worker_processes 1;`)
from config files of ours in a temp dir (`nginx -p <dir> -e <log> -c <conf>`): no system
service, every log, pid and temp path inside that dir. `ensure_nginx()` installs
Debian's `nginx-light` when `nginx` is missing and it can (root, apt-get); when it
cannot, it says why and the nginx rows are reported missing.

The stub answers every `POST /v10` with one fixed v1.0 JSON-RPC `SendMessage` result (a
small Task) and every `POST /v03` with the same Task in the v0.3 shape, both with
`"id":1`, the id the load client sends. `POST /sse10` returns a fixed v1.0 JSON-RPC SSE
stream (a Task, then STREAM_EVENTS - 2 artifact chunks, then the completed status) from
a file: nginx answers a POST to a static file with 405, which `error_page 405 =200`
turns into the file (the internal redirect is a GET).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

STREAM_EVENTS = 200  # data: events per stream of /sse10

_TASK10 = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}
ANSWER_V10 = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": _TASK10}},
                        separators=(",", ":"))
ANSWER_V03 = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
    "kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "completed"}}},
    separators=(",", ":"))


def sse_v10(events: int = STREAM_EVENTS) -> bytes:
    """A v1.0 JSON-RPC SSE stream of `events` small events, the last one completed."""
    def line(result: dict[str, object]) -> str:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result},
                          separators=(",", ":"))
        return f"data: {body}\n\n"

    out = [line({"task": {"id": "t-1", "contextId": "c-1",
                          "status": {"state": "TASK_STATE_WORKING"}}})]
    for n in range(events - 2):
        out.append(line({"artifactUpdate": {
            "taskId": "t-1", "contextId": "c-1", "append": n > 0,
            "artifact": {"artifactId": "a-1", "parts": [{"text": f"chunk {n} "}]}}}))
    out.append(line({"statusUpdate": {"taskId": "t-1", "contextId": "c-1",
                                      "status": {"state": "TASK_STATE_COMPLETED"}}}))
    return "".join(out).encode()


def run_dir(name: str) -> tuple[Path, Path]:
    """A fresh temp dir for one measurement's logs, and nginx's prefix inside it, both
    readable by nginx's worker (nobody)."""
    logs = Path(tempfile.mkdtemp(prefix=f"a2a-{name}-"))
    logs.chmod(0o755)
    prefix = logs / "nginx"
    prefix.mkdir(mode=0o755)
    return logs, prefix


def ensure_nginx() -> tuple[str | None, str]:
    """The nginx binary, installing nginx-light if needed; (None, why) when there is none."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if found:
        return found, "already installed"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, "nginx is missing and cannot be installed here (needs root and apt-get)"
    print("bench: installing nginx-light (apt-get)...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "nginx-light"]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
            if done.returncode != 0:
                return None, f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-300:]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"installing nginx-light failed: {exc!r}"
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    return (found, "installed nginx-light") if found else (None, "nginx-light installed "
                                                           "but no nginx binary found")


def _common(prefix: Path, name: str) -> str:
    tmp = prefix / f"{name}-tmp"
    tmp.mkdir(mode=0o777, exist_ok=True)
    tmp.chmod(0o777)  # the worker may run as nobody
    temp_paths = "\n".join(f"    {kind}_temp_path {tmp}/{kind};"
                           for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""daemon off;
master_process on;
worker_processes 1;
error_log {prefix}/{name}-error.log warn;
pid {prefix}/{name}.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp_paths}
    keepalive_requests 10000000;
    keepalive_timeout 300s;
"""


def stub_conf(prefix: Path, port: int) -> Path:
    """The fixed-answer backend: /v10, /v03 (unary) and /sse10 (a stream)."""
    www = prefix / "www"
    www.mkdir(exist_ok=True)
    (www / "sse10.txt").write_bytes(sse_v10())
    for path in (prefix, www, www / "sse10.txt"):
        path.chmod(0o755)
    conf = prefix / "stub.conf"
    conf.write_text(_common(prefix, "stub") + f"""    server {{
        listen 127.0.0.1:{port} reuseport backlog=4096;
        location /v10 {{ default_type application/json; return 200 '{ANSWER_V10}'; }}
        location /v03 {{ default_type application/json; return 200 '{ANSWER_V03}'; }}
        root {www};
        location /sse10 {{
            default_type text/event-stream;
            try_files /sse10.txt =404; error_page 405 =200 $uri;
        }}
        location = /sse10.txt {{ default_type text/event-stream; }}
    }}
}}
""")
    return conf


def proxy_conf(prefix: Path, port: int, stub_port: int, echo_port: int) -> Path:
    """nginx as a plain reverse proxy over keep-alive upstream pools: `/e/...` to the
    echo stub (bench/echo_stub.py) as `/...`, the rest to the nginx stub."""
    conf = prefix / "proxy.conf"
    conf.write_text(_common(prefix, "proxy") + f"""    upstream stub {{
        server 127.0.0.1:{stub_port};
        keepalive 128;
        keepalive_requests 10000000;
    }}
    upstream echo {{
        server 127.0.0.1:{echo_port};
        keepalive 128;
        keepalive_requests 10000000;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://stub;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
        location /e/ {{
            proxy_pass http://echo/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
""")
    return conf


def nginx_cmd(binary: str, prefix: Path, conf: Path) -> list[str]:
    return [binary, "-p", f"{prefix}/", "-e", str(prefix / "startup-error.log"),
            "-c", str(conf)]
