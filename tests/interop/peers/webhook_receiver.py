"""Minimal push-notification webhook receiver (stdlib only, any Python >= 3.11).

    python tests/interop/peers/webhook_receiver.py --port P [--out FILE]

Answers every POST with 200 ``{}`` and records it as one JSON line
``{"method", "path", "headers": {...}, "body": <parsed JSON or raw text>}`` in
FILE (default: stdout, after the ``READY`` line). Exits cleanly on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO


def make_handler(out: TextIO, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            record = {
                "method": "POST",
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": body,
            }
            with lock:
                out.write(json.dumps(record, sort_keys=True) + "\n")
                out.flush()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(format % args + "\n")

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", help="JSON-lines file (default: stdout)")
    args = parser.parse_args()

    out = open(args.out, "a", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(out, threading.Lock()))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("READY", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    main()
