"""The demo agent's own options, shared by `python -m gateway.demo.agent` and
`a2a-gateway demo-agent`. Light on purpose: the CLI builds its parser from this without
importing the agent (aiohttp, the translators)."""

from __future__ import annotations

import argparse
from typing import Literal

from gateway.demo.variants import VARIANTS

# The protocols the demo agent can serve (`--protocol`).
Protocol = Literal["0.3", "1.0"]
PROTOCOLS: tuple[Protocol, ...] = ("0.3", "1.0")

PROTOCOL_HELP = (
    "the A2A version to serve over JSON-RPC: 0.3 (default), or 1.0, the same agent on the "
    "v1.0 wire (its requests must carry A2A-Version: 1.0)"
)
VARIANT_HELP = (
    "answer slightly differently, to see a difference in shadow diffs (default: answer as "
    "usual): artifact-text appends ' (v2)' to the first text part of a task's first "
    "artifact; data-field adds \"variant\": \"v2\" to that artifact's first data part "
    "(or adds the data part {\"variant\": \"v2\"}). Direct message replies (echo) never change"
)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--protocol", choices=PROTOCOLS, default="0.3", help=PROTOCOL_HELP)
    parser.add_argument("--answer-variant", choices=VARIANTS, default=None, metavar="NAME",
                        help=f"{VARIANT_HELP}. NAME is one of: {', '.join(VARIANTS)}")
