"""Built-in demo agent: an A2A JSON-RPC agent for trying the gateway out.

`make run` starts it behind the gateway so a newcomer sees a real v0.3 peer being
bridged with nothing else running. Run it alone with:

    python -m gateway.demo.agent --host 127.0.0.1 --port 9009

`--protocol 1.0` serves the same agent on the v1.0 wire (gateway.demo.v10), and
`--answer-variant NAME` makes it answer slightly differently (gateway.demo.variants):
a legacy agent and its successor side by side, for migration mode.

What it does is keyed on the first text part of the user message: `task: X`,
`stream: N`, `input: X`, `slow`, anything else is echoed (see gateway.demo.skills).
The implementation lives in the small modules of `gateway.demo`.
"""

from __future__ import annotations

import argparse

import structlog
from aiohttp import web

from gateway.config.logs import LogConfig
from gateway.demo.options import Protocol, add_demo_arguments
from gateway.demo.server import build_app
from gateway.observability.logs.access import ACCESS_LOGGER, AccessLogger
from gateway.observability.observe import configure_logging

__all__ = ["build_app", "main", "start_demo_agent"]

# aiohttp waits this long for in-flight requests on cleanup. Our own streams end as
# soon as shutdown starts, so this only bounds a stuck client, not normal work.
SHUTDOWN_TIMEOUT = 5.0

log = structlog.get_logger("a2a_gateway.demo_agent")


async def start_demo_agent(host: str, port: int, *, protocol: Protocol = "0.3",
                           answer_variant: str | None = None) -> web.AppRunner:
    """Serve the demo agent on host:port until the caller awaits `runner.cleanup()`.

    Port 0 picks a free port; read it back from `runner.addresses`.
    """
    app = build_app(protocol=protocol, answer_variant=answer_variant)
    runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_TIMEOUT, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gateway.demo.agent",
        description="Run the a2a-gateway demo agent (A2A JSON-RPC: v0.3, or v1.0 with "
        "--protocol 1.0).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9009)
    parser.add_argument("--log-format", choices=["json", "console"], default="json",
                        help="json: one JSON object per line on stderr, as the gateway's "
                        "(default); console: text for a person")
    add_demo_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging(LogConfig.model_validate({"format": args.log_format}))
    log.info("demo agent listening", listen=f"{args.host}:{args.port}", protocol=args.protocol,
             answer_variant=args.answer_variant)
    app = build_app(protocol=args.protocol, answer_variant=args.answer_variant)
    # print=None: aiohttp's banner is a plain line on stdout; its access lines are ours.
    web.run_app(app, host=args.host, port=args.port, shutdown_timeout=SHUTDOWN_TIMEOUT,
                print=None, access_log_class=AccessLogger, access_log=ACCESS_LOGGER)
    # An exit code, because `a2a-gateway demo-agent` returns whatever this returns.
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
