"""`a2a-gateway`: serve, check a config, print the config schema, make keys (keygen), run
the demo agent, probe an agent (doctor), read who still calls a gateway (usage), hash an
API key, handle the push relay's dead letters (relay), read and steer a migration
(migration)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from gateway.config.env import CONFIG_PATH_ENV
from gateway.config.models import ConfigError, json_schema, load_config
from gateway.config.state import describe_store
from gateway.demo.options import add_demo_arguments
from gateway.preflight import ConfigProblems, preflight, problems_of
from gateway.workers.count import worker_count


def _refuse(exc: ConfigProblems) -> int:
    """Every problem on its own line (YAML path first), exit 2."""
    for line in exc.problems:
        print(f"a2a-gateway: {line}", file=sys.stderr)
    return 2


def _serve(args: argparse.Namespace) -> int:
    try:
        return _start(args)
    except ConfigProblems as exc:  # found by preflight, or again when a start failed
        return _refuse(exc)


def _start(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    preflight(config)
    loop = os.environ.get("A2A_GATEWAY_LOOP") or config.event_loop
    if args.worker is not None:  # started by a supervisor (gateway/workers)
        from gateway.server.app import serve
        from gateway.workers.worker import WorkerRole

        role = WorkerRole(args.worker, args.ready_fd, args.supervisor)
        role.follow_supervisor()
        return run_on_loop(serve(config, Path(args.config), role), loop)
    count, why = worker_count(config)
    if count == 1:
        from gateway.server.app import serve

        return run_on_loop(serve(config, Path(args.config)), loop)
    from gateway.workers.supervisor import supervise

    loop_runner(loop)  # an unusable loop is refused before any worker starts
    return asyncio.run(supervise(config, Path(args.config), count, why))


def loop_runner(loop: str) -> Callable[[Coroutine[Any, Any, int]], int]:
    """What runs a coroutine on the chosen event loop (`event_loop`, or A2A_GATEWAY_LOOP)."""
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            raise ConfigError("event_loop: uvloop needs the uvloop package "
                              "(pip install 'a2a-gateway[speed]')") from None
        return uvloop.run
    if loop != "asyncio":
        raise ConfigError(f"unknown event loop {loop!r} (asyncio or uvloop)")
    return asyncio.run


def run_on_loop(main: Coroutine[Any, Any, int], loop: str) -> int:
    """Run ``main`` on the chosen event loop."""
    try:
        runner = loop_runner(loop)
    except ConfigError:
        main.close()
        raise
    return runner(main)


def _check(args: argparse.Namespace) -> int:
    try:
        return _check_config(args)
    except ConfigProblems as exc:  # the file's own problems (parsing), one line each
        return _refuse(exc)


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.file)
    problems = problems_of(config)
    if args.connect:
        from gateway.preflight.connect import connect_problems

        problems += asyncio.run(connect_problems(config))
    if problems:
        return _refuse(ConfigProblems(problems))
    print(f"{args.file}: OK — {len(config.tenants)} tenant(s), default "
          f"{config.default_tenant!r}, loss_policy {config.loss_policy.value}")
    for name, tenant in config.tenants.items():
        b = tenant.backend
        print(f"  {name}: {b.url} (A2A {b.version}, {b.binding})")
        m = tenant.migration
        if m is not None:
            c = m.candidate
            share = f", share {m.canary.share:g}" if m.mode == "canary" else ""
            print(f"    migration {m.mode}{share}: candidate {c.url or c.card} "
                  f"(A2A {c.version or 'from its card'}, {c.binding})")
    state = config.state
    print(f"  state: {state.backend} at {describe_store(state)}")
    count, why = worker_count(config)
    print(f"  workers: {count} ({why})")
    if args.connect:
        print("  connect: every target answered")
    return 0


def _schema(_: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0


def _hash_key(_: argparse.Namespace) -> int:
    """The SHA-256 of the API key on stdin (its first line), as `api_keys.keys[].sha256`
    stores it: the key itself never goes into the config."""
    from gateway.auth.apikeys import hash_key

    lines = sys.stdin.read().splitlines()
    key = lines[0].strip() if lines else ""
    if not key:
        print("a2a-gateway: hash-key reads the key from stdin; got none", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def _dev_cert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gateway.tls.devcert import write_dev_cert

    made = write_dev_cert(Path(args.dir), args.host or ["localhost", "127.0.0.1"])
    print(f"{'wrote' if made else 'kept'} ca.crt, tls.crt, tls.key in {args.dir}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from gateway.demo.agent import main as demo_main

    argv = ["--host", args.host, "--port", str(args.port), "--protocol", args.protocol]
    if args.answer_variant is not None:
        argv += ["--answer-variant", args.answer_variant]
    return demo_main(argv)


def _doctor(args: argparse.Namespace) -> int:
    from gateway.doctor.commands import run_doctor

    return run_doctor(args)


def _usage(args: argparse.Namespace) -> int:
    from gateway.doctor.commands import run_usage

    return run_usage(args)


def _keygen(args: argparse.Namespace) -> int:
    from gateway.auth import keygen

    if args.kind == "relay":
        print(keygen.relay_key())
    elif args.kind == "webhook":
        print(keygen.webhook_secret())
    elif args.kind == "api-key":
        key, digest = keygen.api_key()
        print(f"{key}\n{digest}")
    else:
        pem, jwks = keygen.card_signing_key(args.kid)
        text = json.dumps(jwks, indent=2) + "\n"
        if args.jwk:
            Path(args.jwk).write_text(text, encoding="utf-8")
        else:
            sys.stderr.write(text)
        sys.stdout.write(pem)
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"a2a-gateway {version('a2a-gateway')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "a2a-gateway (version unknown: not installed)"


DEFAULT_CONFIG = "config/gateway.yaml"


def config_path(given: str | None) -> str:
    """The config file of serve/check-config: --config (or check-config's argument), else
    A2A_GATEWAY_CONFIG, else config/gateway.yaml when the current folder has one."""
    if given:
        return given
    from_env = os.environ.get(CONFIG_PATH_ENV)
    if from_env:
        return from_env
    if Path(DEFAULT_CONFIG).is_file():
        return DEFAULT_CONFIG
    raise ConfigError(f"no config: {DEFAULT_CONFIG} is not in {Path.cwd()}; pass --config "
                      f"FILE or set {CONFIG_PATH_ENV} (`a2a-gateway schema` describes the file)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2a-gateway", description=__doc__, epilog="Any config option can be set from "
        "the environment: A2A_GATEWAY__<YAML path, parts joined by __>=<YAML value>, e.g. "
        "A2A_GATEWAY__WORKERS=1 (docs/configuration.md).")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)
    config_help = (f"the config file (default: ${CONFIG_PATH_ENV}, else {DEFAULT_CONFIG} "
                   f"in the current folder)")
    p = sub.add_parser("serve", help="run the gateway")
    p.add_argument("--config", help=config_help)
    # Set by the supervisor of `workers: N` for each worker it starts (gateway/workers).
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--ready-fd", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--supervisor", type=int, default=0, help=argparse.SUPPRESS)
    p.set_defaults(func=_serve, config_arg="config")
    p = sub.add_parser("check-config", help="validate a config file and exit "
                       "(exit 2 and one line per problem when it cannot serve)")
    p.add_argument("file", nargs="?", help=config_help)
    p.add_argument("--connect", action="store_true", help="also reach the Redis store, "
                   "the OTLP endpoint, JWK set URLs and each backend once (3 s bound "
                   "each)")
    p.set_defaults(func=_check, config_arg="file")
    p = sub.add_parser("schema", help="print the config's JSON Schema")
    p.set_defaults(func=_schema)
    p = sub.add_parser("keygen", help="print a new secret in the format the gateway loads")
    kinds = p.add_subparsers(dest="kind", required=True)
    kinds.add_parser("relay", help="a push-relay key (32 random bytes, base64) for "
                     "A2A_GATEWAY_RELAY_KEYS or push_relay.keys")
    k = kinds.add_parser("card-signing", help="an EC P-256 private key (PEM, on stdout) for "
                         "card_signing.key_file, and its public JWK set (on stderr, or --jwk)")
    k.add_argument("--kid", help="key id to put in the JWK (use the same as card_signing.kid)")
    k.add_argument("--jwk", metavar="FILE", help="write the public JWK set to FILE "
                   "instead of stderr (serve it at card_signing.jku)")
    kinds.add_parser("webhook", help="a webhook signing secret (whsec_…) for a file or "
                     "environment variable named in tenants.<name>.push_signing.keys")
    kinds.add_parser("api-key", help="a random API key (line 1, for the caller) and its "
                     "SHA-256 (line 2, for auth.api_keys.keys[].sha256)")
    p.set_defaults(func=_keygen)
    p = sub.add_parser("hash-key", help="print the SHA-256 of an API key read from stdin "
                       "(for auth.api_keys.keys[].sha256)")
    p.set_defaults(func=_hash_key)
    p = sub.add_parser("dev-cert", help="write a private CA and a server certificate "
                       "(ca.crt, tls.crt, tls.key) for trying TLS; kept if already there")
    p.add_argument("--dir", required=True, help="the folder to write the files into")
    p.add_argument("--host", action="append", help="a DNS name or IP the certificate names "
                   "(repeatable; default localhost and 127.0.0.1)")
    p.set_defaults(func=_dev_cert)
    p = sub.add_parser("demo-agent", help="run only the built-in demo agent (A2A v0.3 "
                       "JSON-RPC, or v1.0 with --protocol 1.0)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on "
                   "(default: %(default)s)")
    p.add_argument("--port", type=int, default=9009, help="port to listen on "
                   "(default: %(default)s)")
    add_demo_arguments(p)
    p.set_defaults(func=_demo)
    p = sub.add_parser("doctor", help="probe an agent: what it speaks, and what the gateway "
                       "would do in front of it (exit 1 when a target cannot be served)")
    p.add_argument("url", nargs="?", help="agent card URL, agent base URL, or host:port (gRPC)")
    p.add_argument("--config", help="probe every tenant's backend of this gateway config")
    p.add_argument("--through-gateway", metavar="URL",
                   help="run the probes through a running gateway (per tenant: URL/{tenant})")
    p.add_argument("--send", metavar="TEXT", help="also send TEXT: a message, a stream, a "
                   "cancel and push-config calls on the task made")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_doctor)
    from gateway.relay import admin_cli

    admin_cli.add_parser(sub, config_help)
    from gateway.migration import cli as migration_cli

    migration_cli.add_parser(sub, config_help)
    p = sub.add_parser("usage", help="which client versions and bindings call a gateway "
                       "(from its /metrics)")
    p.add_argument("url", help="the gateway's base URL (or its /metrics URL)")
    p.add_argument("--json", action="store_true", help="print the usage as JSON")
    p.set_defaults(func=_usage)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "config_arg", None):  # serve, check-config: find the file
            setattr(args, args.config_arg, config_path(getattr(args, args.config_arg)))
        return int(args.func(args))
    except ConfigProblems as exc:
        return _refuse(exc)
    except ConfigError as exc:
        print(f"a2a-gateway: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
