"""What only starting can tell: a listen address already in use, or a file that was
fine at preflight and is gone when `serve` opens it. Either becomes one line naming the
YAML path (a ConfigError: exit 2), never a traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.config import ConfigError, GatewayConfig
from gateway.preflight import problems_of
from gateway.preflight.problems import EXPECTED, ConfigProblems, describe
from gateway.state.base import StoreError


@contextmanager
def binding(path: str, address: str) -> Iterator[None]:
    """Opening the listener of ``path`` (e.g. `listen.http`) at ``address``."""
    try:
        yield
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"{path}: cannot bind {address}: {why}") from None


def start_failure(config: GatewayConfig, exc: Exception) -> Exception:
    """What to raise for ``exc``, raised while the gateway was being started from
    ``config``: the config's problems (preflight run again, so each is named by the
    one rule that knows it), else ``exc`` in one line when it is an expected failure,
    else ``exc`` itself (a bug keeps its traceback)."""
    if isinstance(exc, ConfigError):
        return exc
    if not isinstance(exc, EXPECTED):
        return exc
    lines = problems_of(config)
    if lines:
        return ConfigProblems(lines)
    if isinstance(exc, StoreError):
        where = "state.path" if config.state.backend == "sqlite" else "state.url"
        return ConfigError(f"{where}: {describe(exc)}")
    return ConfigError(f"cannot start: {describe(exc)}")
