"""`a2a-gateway migration report|promote|rollback`: a tenant's migration report, and the
canary's share moved by hand (docs/migration.md, "The report").

Unlike `a2a-gateway relay`, which reads the state store, these ask the running gateway:
the report's counters live in its memory. They call its admin API
(gateway/server/admin_migration.py) at ``--admin URL``, else where the config says the
admin endpoints are: `listen.admin`, else the main listener `listen.http`. ``--json``
prints the API's answer as it came. Exit 1 when the gateway answers no (no such tenant,
no migration, refused), 2 when it cannot be reached or the config cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from gateway.config.models import ConfigError, GatewayConfig, load_config
from gateway.migration import render
from gateway.migration.api import LAST_DEFAULT, LAST_MAX

API = "/_admin/migration"  # gateway/server/admin_migration.py PREFIX
DEFAULT_KEY_HEADER = "x-api-key"  # auth.api_keys.header's default
_TIMEOUT = aiohttp.ClientTimeout(total=15, sock_connect=3)


class _AdminUrl(argparse.Action):
    """``--admin URL``: the gateway is named, so no config file is looked for (main()
    finds one for every command with a ``config_arg``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.config_arg = None


def _last(text: str) -> int:
    try:
        last = int(text)
    except ValueError:
        last = 0
    if not 1 <= last <= LAST_MAX:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {LAST_MAX}")
    return last


def add_parser(sub: Any, config_help: str) -> None:
    p = sub.add_parser("migration", help="migration mode: a tenant's report (calls, shadow "
                       "comparisons, disagreements), promote or roll back the candidate, "
                       "from the running gateway's admin API")
    actions = p.add_subparsers(dest="action", required=True)
    for name, what in (("report", "show a tenant's migration report (without a tenant: "
                                  "the tenants in migration)"),
                       ("promote", "by hand: the candidate gets every new conversation"),
                       ("rollback", "by hand: the candidate gets no new conversation")):
        a = actions.add_parser(name, help=what)
        if name == "report":
            a.add_argument("tenant", nargs="?", help="the tenant (default: list them all)")
            a.add_argument("--last", type=_last, default=LAST_DEFAULT, help="disagreements "
                           f"to show, newest first (1 to {LAST_MAX}; default: %(default)s)")
        else:
            a.add_argument("tenant", help="the tenant")
        a.add_argument("--json", action="store_true", help="print the admin API's JSON "
                       "answer as it came")
        a.add_argument("--config", help=config_help + "; read for where the admin "
                       "endpoints listen and the API key header")
        a.add_argument("--admin", metavar="URL", action=_AdminUrl, help="the gateway's admin "
                       "base URL (default: http://<listen.admin>, else the main listener)")
        a.add_argument("--api-key-env", metavar="VAR", help="send the API key held in "
                       "environment variable VAR (needed on the main listener once anyone "
                       "authenticates)")
        a.set_defaults(func=run, config_arg="config")


def _host(address: str) -> str:
    """host:port as a URL's authority; a wildcard host (0.0.0.0, ::) is reached on the
    loopback."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def admin_url(config: GatewayConfig | None, given: str | None) -> str:
    """The base URL of the gateway's admin endpoints (no trailing slash)."""
    if given:
        return (given if "://" in given else "http://" + given).rstrip("/")
    if config is None:
        raise ConfigError("no gateway to ask: pass --admin URL or --config FILE")
    if config.listen.admin is not None:  # plain HTTP, always
        return "http://" + _host(config.listen.admin)
    scheme = "https" if config.auth is not None and config.auth.server_tls is not None \
        else "http"
    return f"{scheme}://{_host(config.listen.http)}"


def key_headers(config: GatewayConfig | None, env_var: str | None,
                environ: dict[str, str] | None = None) -> dict[str, str]:
    """The API key from ``env_var`` in the header the gateway reads keys from."""
    if not env_var:
        return {}
    key = (os.environ if environ is None else environ).get(env_var, "").strip()
    if not key:
        raise ConfigError(f"--api-key-env: environment variable {env_var} is empty or unset")
    keys = config.auth.api_keys if config is not None and config.auth is not None else None
    if keys is None:
        return {DEFAULT_KEY_HEADER: key}
    if keys.header is not None:
        return {keys.header: key}
    scheme = keys.authorization_schemes[0] if keys.authorization_schemes else "Bearer"
    return {"Authorization": f"{scheme} {key}"}


@dataclass
class Call:
    method: str
    url: str
    headers: dict[str, str]


def plan(args: argparse.Namespace, config: GatewayConfig | None) -> Call:
    """What the command asks of the admin API."""
    base = admin_url(config, args.admin) + API
    headers = key_headers(config, args.api_key_env)
    if args.action != "report":
        return Call("POST", f"{base}/{quote(args.tenant, safe='')}/{args.action}", headers)
    if args.tenant is None:
        return Call("GET", base, headers)
    return Call("GET", f"{base}/{quote(args.tenant, safe='')}?last={args.last}", headers)


class Unreachable(Exception):
    """The gateway did not answer (the message names the URL)."""


async def _ask(call: Call) -> tuple[int, str]:
    try:
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as session, \
                session.request(call.method, call.url, headers=call.headers) as resp:
            return resp.status, await resp.text()
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise Unreachable(f"cannot reach the gateway's admin API at {call.url}: "
                          f"{reason}") from None


def _refusal(status: int, body: str) -> str:
    """The gateway's reason: {"error": "…"} (admin API) or google.rpc.Status (refused)."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else error
    said = str(message) if message else body.strip()[:200] or "no reason given"
    hint = " (an admin credential: --api-key-env VAR)" if status in (401, 403) else ""
    return f"HTTP {status}: {said}{hint}"


def show(args: argparse.Namespace, body: str) -> str:
    """The answer as the command prints it."""
    if args.json:
        return body if body.endswith("\n") else body + "\n"
    answer = json.loads(body)
    if not isinstance(answer, dict):  # the admin API answers objects only
        raise ValueError("not a JSON object")
    if args.action == "report":
        return render.tenants_table(answer) if args.tenant is None else render.table(answer)
    return f"{args.action}: {render.summary(answer)}\n"


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config) if args.config else None
    call = plan(args, config)
    try:
        status, body = asyncio.run(_ask(call))
    except Unreachable as exc:
        print(f"a2a-gateway: {exc}", file=sys.stderr)
        return 2
    if status != 200:
        print(f"a2a-gateway: {_refusal(status, body)}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(show(args, body))
    except ValueError:  # not a JSON object: whatever answered is not the admin API
        print(f"a2a-gateway: {call.url} did not answer a JSON object", file=sys.stderr)
        return 1
    return 0
