"""A fixed-answer backend that echoes the JSON-RPC id: raw HTTP/1.1 on uvloop.

    python -m bench.echo_stub --port P

The gateway checks that a backend's answer carries the id it sent (its own, not the
client's), so nginx's `return 200 '<fixed answer>'` serves only the calls the gateway
forwards as sent; translated calls need this stub. It answers `POST /v10...` with a
fixed v1.0 `SendMessage` result (a small Task), `POST /v03...` with the same Task in the
v0.3 shape, and `POST /sse10...` with a fixed v1.0 SSE stream of bench.nginx.STREAM_EVENTS
events (one body with a Content-Length), each with the request's id. It does nothing
else: a regex finds the id, a template takes it. `POST /u10...` and `/u03...` answer the
same Tasks with a new task id each time (the task index's cost: bench/recording.py); each
stream is a new task too, as an agent's would be (each has a journal of its own).
`POST /m10...` and `/m03...` (migration mode: bench/migration.py) answer a message with a
new task in a new conversation (task and context ids new each time) and `GetTask` /
`tasks/get` with the task of the id asked, completed; `/m10/wait<ms>...` the same after
that many milliseconds (an agent that takes its time: the gateway is not the bottleneck).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import signal

from bench import nginx

_ID = re.compile(rb'"id"\s*:\s*("[^"]*"|-?\d+|null)')
_MARK = b'"id":1,'


def _template(body: str | bytes, content_type: bytes) -> tuple[bytes, bytes]:
    """The answer with every `"id":1,` replaced by a NUL, where the request's id goes."""
    raw = body if isinstance(body, bytes) else body.encode()
    return content_type, b"\x00".join(raw.split(_MARK))


_ANSWERS = {b"/v10": _template(nginx.ANSWER_V10, b"application/json"),
            b"/v03": _template(nginx.ANSWER_V03, b"application/json"),
            b"/u10": _template(nginx.ANSWER_V10, b"application/json"),
            b"/u03": _template(nginx.ANSWER_V03, b"application/json"),
            b"/sse10": _template(nginx.sse_v10(), b"text/event-stream")}
_TASK_ID = b'"t-1"'
_count = itertools.count(1)


_GETS = (b'"GetTask"', b'"tasks/get"')
_WAIT = re.compile(rb"^/m(?:10|03)/wait(\d+)")


def _task(v03: bool, task_id: str, context_id: str) -> dict[str, object]:
    if v03:
        return {"kind": "task", "id": task_id, "contextId": context_id,
                "status": {"state": "completed"}}
    return {"id": task_id, "contextId": context_id,
            "status": {"state": "TASK_STATE_COMPLETED"}}


def migration_answer(v03: bool, body: bytes) -> bytes:
    """The JSON body of a `/m10` or `/m03` answer: a new task and conversation for a
    message, the task asked for a GetTask."""
    request = json.loads(body)
    if any(method in body for method in _GETS):
        task_id = str(request["params"]["id"])
        result = _task(v03, task_id, "c-" + task_id.removeprefix("t-"))
    else:
        n = next(_count)
        task = _task(v03, f"t-{n}", f"c-{n}")
        result = task if v03 else {"task": task}
    return json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result},
                      separators=(",", ":")).encode()


def _http(content_type: bytes, out: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type
            + b"\r\nContent-Length: " + str(len(out)).encode() + b"\r\n\r\n" + out)


def answer(path: bytes, body: bytes) -> bytes:
    if path.startswith((b"/m10", b"/m03")):
        return _http(b"application/json", migration_answer(path.startswith(b"/m03"), body))
    for prefix, (content_type, template) in _ANSWERS.items():
        if path.startswith(prefix):
            found = _ID.search(body)
            rid = found.group(1) if found else b"null"
            out = template.replace(b"\x00", b'"id":' + rid + b",")
            if prefix.startswith(b"/u") or prefix == b"/sse10":  # a new task each time
                out = out.replace(_TASK_ID, b'"t-%d"' % next(_count))
            return _http(content_type, out)
    return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"


class Server(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(buf) < end + 4 + length:
                return
            body = bytes(buf[end + 4:end + 4 + length])
            del buf[:end + 4 + length]
            path = head.split(b" ", 2)[1]
            assert self.transport is not None
            wait = _WAIT.match(path)
            if wait is None:
                self.transport.write(answer(path, body))
            else:
                asyncio.get_running_loop().call_later(
                    int(wait.group(1)) / 1000, self._write, answer(path, body))

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Server, host, port, backlog=4096)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.echo_stub")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(args.host, args.port))
    else:
        uvloop.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
