"""SDK-agnostic agent plumbing shared by agent_v03.py and agent_v10.py.

Imported from *both* SDK virtualenvs, so it depends only on the standard library
plus uvicorn and grpcio (installed in both). Everything that touches a2a-sdk
types lives in the version-specific scripts. Also the single source of the
scripted agent behaviour constants that the clients check against.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

HOST = "127.0.0.1"

# --------------------------------------------------------------------------- #
# Agent behaviour (identical in both agents)
# --------------------------------------------------------------------------- #
BLOB = b"\x00\x01\x02binary"
BLOB_NAME = "blob.bin"
BLOB_MIME = "application/octet-stream"
DATA = {"k": 1}
QUESTION = "From where?"
STREAM_ARTIFACT_ID = "stream"
RESULT_ARTIFACT_ID = "result"
ANSWER_ARTIFACT_ID = "answer"
STREAM_INTERVAL_S = 0.05
SLOW_TIMEOUT_S = 30.0
EXTENDED_SKILL_ID = "secret-skill"


@dataclass(frozen=True)
class Command:
    """What the agent was asked to do, parsed from the first text part."""

    kind: str  # task | stream | input | slow | echo
    arg: str = ""
    count: int = 0
    interval: float = STREAM_INTERVAL_S  # stream: seconds before each chunk


def parse_command(text: str) -> Command:
    stripped = text.strip()
    if stripped == "slow":
        return Command("slow")
    for kind in ("task", "input", "stream"):
        prefix = f"{kind}:"
        if stripped.startswith(prefix):
            arg = stripped[len(prefix) :].strip()
            if kind != "stream":
                return Command(kind, arg)
            if arg.isdigit():
                return Command(kind, arg, int(arg))
            # `stream: N@MS`: N chunks, MS milliseconds apart (a test that cuts the
            # backend's stream between two chunks needs room between them).
            count, _, pace = arg.partition("@")
            if count.isdigit() and pace.isdigit():
                return Command(kind, arg, int(count), int(pace) / 1000)
    return Command("echo", text)


def stream_chunk(index: int, count: int) -> tuple[str, bool, bool]:
    """Text, append flag and lastChunk flag of chunk ``index`` out of ``count``."""
    return f"chunk {index}", index > 0, index == count - 1


ANSWER_VARIANTS = ("artifact-text",)


@dataclass(frozen=True)
class Voice:
    """How an agent words the texts it writes. By default as the table in README.md says;
    ``name`` (`--name`) signs each of them with `` [name]``, so a test that fronts two
    agents with one tenant (migration mode) sees which one answered each call, whatever
    the client's dialect; ``variant`` `artifact-text` (`--answer-variant`) words a `task:`
    result's text differently, for a comparison that must find that difference."""

    name: str | None = None
    variant: str | None = None

    def says(self, text: str) -> str:
        return f"{text} [{self.name}]" if self.name else text

    def built(self, subject: str) -> str:
        """The text part of a `task: X` result."""
        text = f"built {subject}"
        return self.says(f"{text} (v2)" if self.variant == "artifact-text" else text)


def voice_of(args: argparse.Namespace) -> Voice:
    return Voice(args.name, args.answer_variant)


# --------------------------------------------------------------------------- #
# Agent process runner
# --------------------------------------------------------------------------- #
def agent_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jsonrpc-port", type=int, required=True)
    parser.add_argument("--rest-port", type=int)
    parser.add_argument("--grpc-port", type=int)
    parser.add_argument("--name", default=None,
                        help="sign every text the agent writes with ` [NAME]` (Voice)")
    parser.add_argument("--answer-variant", default=None, choices=ANSWER_VARIANTS,
                        help="word one part of the answers differently (Voice)")
    return parser.parse_args()


def http_url(port: int) -> str:
    return f"http://{HOST}:{port}"


def grpc_target(port: int) -> str:
    return f"{HOST}:{port}"


def _uvicorn_server(app: Any, port: int) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        # Signals are handled once for the whole process in run_agent().
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    config = uvicorn.Config(
        app,
        host=HOST,
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    return _Server(config)


async def _wait_accepting(ports: list[int], deadline_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    for port in ports:
        while True:
            try:
                _, writer = await asyncio.open_connection(HOST, port)
            except OSError:
                if loop.time() > end:
                    raise RuntimeError(f"port {port} never accepted connections") from None
                await asyncio.sleep(0.05)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            break


async def run_agent(
    http_apps: list[tuple[Any, int]],
    grpc_port: int | None = None,
    grpc_register: Callable[[Any], None] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve every ASGI app (and gRPC), print READY, run until SIGTERM/SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    servers = [_uvicorn_server(app, port) for app, port in http_apps]
    serving = [asyncio.create_task(server.serve()) for server in servers]
    ports = [port for _, port in http_apps]

    grpc_server = None
    if grpc_port is not None and grpc_register is not None:
        import grpc

        grpc_server = grpc.aio.server()
        grpc_register(grpc_server)
        grpc_server.add_insecure_port(grpc_target(grpc_port))
        await grpc_server.start()
        ports.append(grpc_port)

    # `started` guards against READY when someone else already owns a port.
    while not all(server.started for server in servers):
        if any(task.done() for task in serving):
            raise SystemExit("an HTTP listener failed to start")
        await asyncio.sleep(0.02)
    await _wait_accepting(ports)
    print("READY", flush=True)

    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([stopper, *serving], return_when=asyncio.FIRST_COMPLETED)
    failed = stopper not in done
    stopper.cancel()

    for server in servers:
        server.should_exit = True
    stopping: list[Awaitable[Any]] = list(serving)
    if grpc_server is not None:
        stopping.append(grpc_server.stop(grace=0.5))
    await asyncio.gather(*stopping, return_exceptions=True)
    if on_shutdown is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(on_shutdown(), timeout=2)
    if failed:
        raise SystemExit("an HTTP listener stopped unexpectedly")
