"""Secrets named in config: read once from a file or an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.auth.config import SecretSource


class SecretError(Exception):
    """A configured secret cannot be read; the message names where, never the value."""


def read_secret(file: str | None = None, env: str | None = None) -> str:
    """The secret: the first line of ``file``, or the value of ``env``, stripped."""
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretError(f"cannot read secret file {file}: {exc.strerror}") from None
        value = text.splitlines()[0].strip() if text.strip() else ""
        where = f"file {file}"
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
