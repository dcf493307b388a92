"""The built-in demo agent (v0.3 JSON-RPC) as a benchmark backend.

Same agent as `python -m gateway.demo.agent`, started through `start_demo_agent`, which
has no access log: a log line per request would cost the backend more than the gateway
adds, and every scenario shares the backend.

    python -m bench.backend --port P
"""

from __future__ import annotations

import argparse
import asyncio
import signal

from gateway.demo.agent import start_demo_agent


async def serve(host: str, port: int) -> None:
    runner = await start_demo_agent(host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.backend")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
