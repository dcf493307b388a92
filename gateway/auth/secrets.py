"""Secrets named in config: read once from a file or an environment variable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

from gateway.config.auth import SecretSource

log = structlog.get_logger("a2a_gateway.auth")


class SecretError(Exception):
    """A configured secret cannot be read; the message names where, never the value."""


def read_secret(file: str | None = None, env: str | None = None) -> str:
    """The secret: the first line of ``file``, or the value of ``env``, stripped."""
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretError(f"cannot read secret file {file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise SecretError(f"secret file {file} is not UTF-8 text") from None
        value = text.splitlines()[0].strip() if text.strip() else ""
        where = f"file {file}"
        if _world_readable(file):
            log.warning("secret file readable by every user; chmod 600 it", file=file)
    elif env is not None:
        value = os.environ.get(env, "").strip()
        where = f"environment variable {env}"
    else:
        raise SecretError("no secret source named")
    if not value:
        raise SecretError(f"the secret in {where} is empty")
    return value


def read_source(source: SecretSource) -> str:
    return read_secret(source.file, source.env)


def _world_readable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False
