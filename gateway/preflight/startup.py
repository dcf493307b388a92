"""What only starting can tell: a listen address already in use, or a file that was
fine at preflight and is gone when `serve` opens it. Either becomes one line naming the
YAML path (a ConfigError: exit 2), never a traceback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.auth.jwks import JwksError
from gateway.auth.secrets import SecretError
from gateway.config.models import ConfigError, GatewayConfig
from gateway.preflight import problems_of
from gateway.preflight.problems import EXPECTED, ConfigProblems, describe
from gateway.state.base import StoreError


@contextmanager
def binding(path: str, address: str) -> Iterator[None]:
    """Opening the listener of ``path`` (e.g. `listen.http`) at ``address``."""
    try:
        yield
    except socket.gaierror as exc:  # a host name that does not resolve
        raise ConfigError(f"{path}: cannot bind {address}: {exc.strerror}") from None
    except OSError as exc:
        # The errno's text: asyncio's own message repeats the address.
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"{path}: cannot bind {address}: {why}") from None


def check_free(path: str, address: str) -> None:
    """Refuse a listen address another process holds, before anything is started: bound
    here without SO_REUSEPORT, which the workers of one gateway set to share a port (so
    they would otherwise share it silently with whoever else set it on that port), and
    gRPC would log its own failure on stderr before answering."""
    host, _, port = address.rpartition(":")
    with binding(path, address):
        infos = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        for family, kind, proto, _, sockaddr in infos:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(sockaddr)


def check_listeners_free(config: GatewayConfig, demo_agent: bool = True) -> None:
    """Every listener of ``config`` can be bound (and the demo agent's, with
    ``demo_agent``): one line naming the first one that cannot."""
    listeners = [("listen.http", config.listen.http), ("listen.grpc", config.listen.grpc),
                 ("listen.admin", config.listen.admin)]
    if demo_agent and config.demo_agent is not None:
        listeners.append(("demo_agent.listen", config.demo_agent.listen))
    for path, address in listeners:
        if address is not None:
            check_free(path, address)


def start_failure(config: GatewayConfig, exc: Exception) -> Exception:
    """What to raise for ``exc``, raised while the gateway was being started from
    ``config``: the config's problems (preflight run again, so each is named by the
    one rule that knows it), else ``exc`` in one line when the world outside failed
    (a file, a secret, the store), else ``exc`` itself (a bug keeps its traceback)."""
    if isinstance(exc, ConfigError):
        return exc
    if not isinstance(exc, EXPECTED):
        return exc
    lines = problems_of(config)
    if lines:
        return ConfigProblems(lines)
    if isinstance(exc, StoreError):
        where = "state.path" if config.state.backend == "sqlite" else \
            "state.sentinel" if config.state.sentinel is not None else "state.url"
        return ConfigError(f"{where}: {describe(exc)}")
    if isinstance(exc, _OUTSIDE):
        return ConfigError(f"cannot start: {describe(exc)}")
    return exc  # a ValueError no check explains is more likely a bug: keep its traceback


# Failures of the world outside (files, secrets, network), not of the code.
_OUTSIDE = (OSError, SecretError, JwksError)
