"""The two subcommands' bodies (their arguments are in gateway/cli.py): arguments in, report out, an exit code back.

Exit codes: 0 every target can be served; 1 one cannot (unreachable, or no interface
the gateway can use); 2 bad arguments or config (the CLI's ConfigError).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import structlog

from gateway.config.models import load_config
from gateway.doctor import render as doctor_render
from gateway.doctor import usage as usage_mod
from gateway.doctor.runner import Options, doctor, silent, stderr_progress

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")


def _quiet_logs() -> None:
    # The translators and egress log through structlog; doctor's stdout is its report.
    structlog.configure(logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
                        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def run_doctor(args: argparse.Namespace) -> int:
    if args.url is None and args.config is None and args.through_gateway is None:
        print("a2a-gateway doctor: give a URL, --config or --through-gateway", file=sys.stderr)
        return 2
    _quiet_logs()
    config = load_config(args.config) if args.config else None
    opts = Options(send=args.send, progress=silent if args.quiet else stderr_progress)
    report = asyncio.run(doctor(args.url, opts, config, args.through_gateway))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        sys.stdout.write(doctor_render.render(report))
    return 0 if report.ok else 1


def run_usage(args: argparse.Namespace) -> int:
    try:
        found = asyncio.run(usage_mod.fetch(args.url))
    except (OSError, ValueError) as exc:
        print(f"a2a-gateway usage: {exc}", file=sys.stderr)
        return 1
    if args.json:
        out: Any = found.to_json()
        print(json.dumps(out, indent=2))
    else:
        sys.stdout.write(usage_mod.render(found))
    return 0
