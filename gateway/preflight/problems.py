"""How preflight collects what is wrong: one line per problem, each starting with the
YAML path of the option at fault, so an operator sees every problem of a config at once
and knows where to look (README "What check-config checks")."""

from __future__ import annotations

import ssl
from collections.abc import Callable

from cryptography.exceptions import UnsupportedAlgorithm

from gateway.auth.jwks import JwksError
from gateway.auth.secrets import SecretError
from gateway.config.models import ConfigError, ConfigProblems
from gateway.state.base import StoreError

__all__ = ["EXPECTED", "ConfigProblems", "Problems", "describe"]


def describe(exc: BaseException) -> str:
    """What went wrong, in one line, for the failures loaders raise on a bad file."""
    if isinstance(exc, ssl.SSLError):
        # ssl's own text ("[SSL] PEM lib (_ssl.c:3900)") says nothing to an operator.
        return f"not usable by TLS: {exc.reason or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError):
        if exc.filename is not None and exc.strerror:
            return f"cannot read {exc.filename}: {exc.strerror}"
        return exc.strerror or str(exc)
    return " ".join(str(exc).split()) or type(exc).__name__


# What a loader raises for a file or setting that cannot be used (anything else is a bug
# and keeps its traceback).
EXPECTED: tuple[type[BaseException], ...] = (
    OSError, ValueError, TypeError, UnsupportedAlgorithm, SecretError, JwksError, StoreError)


class Problems:
    """The lines found so far; ``check`` runs one step and records its failure."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.lines.append(f"{path}: {message}")

    def check(self, path: str, step: Callable[[], object]) -> bool:
        """Run ``step``; on an expected failure, record it under ``path``. True if it ran."""
        try:
            step()
        except ConfigProblems as exc:
            self.lines.extend(exc.problems)
        except ConfigError as exc:
            self.add(path, str(exc))
        except EXPECTED as exc:
            self.add(path, describe(exc))
        else:
            return True
        return False
