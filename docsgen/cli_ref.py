"""The command-line reference, rendered from `gateway.cli.build_parser()`."""

from __future__ import annotations

import argparse
import functools

from docsgen import HEADER, link_docs
from gateway.cli import build_parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public walk of its subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _cell(text: str) -> str:
    return link_docs(" ".join(text.split()).replace("|", "\\|"))


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(
                action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = str(action.metavar or action.dest)
            if action.nargs == "?":
                name = f"[{name}]"
        helptext = (action.help or "") % {"default": action.default} if action.help else ""
        if action.option_strings and action.required:
            helptext = f"required. {helptext}"
        rows.append(f"| `{name}` | {_cell(helptext)} |")
    return rows


def _section(path: list[str], parser: argparse.ArgumentParser, helptext: str,
             lines: list[str]) -> None:
    # A fixed width: the usage lines must not depend on the terminal that renders them.
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=100)
    level = "#" * min(len(path) + 1, 4)
    lines += [f"{level} `{' '.join(path)}`", ""]
    if helptext:
        lines += [_cell(helptext)[:1].upper() + _cell(helptext)[1:] + ".", ""]
    lines += ["```", parser.format_usage().strip().replace("usage: ", ""), "```", ""]
    rows = _options(parser)
    if rows:
        lines += ["| argument | what |", "|---|---|", *rows, ""]
    helps = _helps(parser)
    for name, child in _subparsers(parser).items():
        _section([*path, name], child, helps.get(name, ""), lines)


def render() -> str:
    parser = build_parser()
    parser.prog = "a2a-gateway"
    lines = [HEADER.format(source="gateway/cli.py, build_parser") + "# Command line", "",
             "`a2a-gateway` (or `python -m gateway`, the same program) has one subcommand per "
             "job. `a2a-gateway COMMAND --help` prints what this page says.", "",
             _cell(parser.epilog or ""), ""]
    _section(["a2a-gateway"], parser, "", lines)
    return "\n".join(lines).rstrip("\n") + "\n"
