"""Files and secrets the auth settings name (API-key files and variables, JWK set files,
backend credentials) and the SQLite state file, each read by the loader `serve` uses."""

from __future__ import annotations

import os
import tempfile
from functools import partial
from pathlib import Path

from gateway.auth.jwks import read_jwks_file
from gateway.auth.secrets import read_secret, read_source
from gateway.config.auth import AuthConfig, SecretSource
from gateway.config.state import StateConfig
from gateway.preflight.problems import Problems
from gateway.preflight.tls import check_client_tls, check_server_tls

_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_auth(problems: Problems, prefix: str, auth: AuthConfig) -> None:
    """Every file and secret of one `auth` section (gateway-wide or a tenant's)."""
    if auth.server_tls is not None:
        check_server_tls(problems, f"{prefix}.server_tls", auth.server_tls)
    if auth.backend_tls is not None:
        check_client_tls(problems, f"{prefix}.backend_tls", auth.backend_tls)
    if auth.api_keys is not None:
        for i, entry in enumerate(auth.api_keys.keys):
            if entry.sha256 is not None:
                continue
            where = "key_file" if entry.key_file is not None else "key_env"
            problems.check(f"{prefix}.api_keys.keys.{i}.{where}",
                           partial(read_secret, entry.key_file, entry.key_env))
    if auth.jwt is not None and auth.jwt.jwks_file is not None:
        jwks = auth.jwt.jwks_file
        problems.check(f"{prefix}.jwt.jwks_file", lambda: read_jwks_file(jwks))
    backend = auth.backend_auth
    if backend is not None:
        sources: list[tuple[str, SecretSource | None]] = [
            ("bearer", backend.bearer), ("api_key", backend.api_key),
            ("oauth.client_secret", backend.oauth.client_secret if backend.oauth else None)]
        for name, source in sources:
            if source is not None:
                where = "file" if source.file is not None else "env"
                problems.check(f"{prefix}.backend_auth.{name}.{where}",
                               partial(read_source, source))


def check_state_path(problems: Problems, state: StateConfig) -> None:
    """The SQLite file can be opened for writing, and so can its directory (WAL mode adds
    `-wal` and `-shm` files beside it); a missing directory is made at start, so its
    nearest existing parent must take it."""
    if state.backend != "sqlite" or state.path == ":memory:":
        return
    problems.check("state.path", lambda: _writable_sqlite(Path(state.path)))


def _writable_sqlite(path: Path) -> None:
    if path.exists():
        if not path.is_file():
            raise ValueError(f"{path} is not a regular file")
        with open(path, "r+b") as f:  # opens for writing, writes nothing
            head = f.read(len(_SQLITE_MAGIC))
        if head and head != _SQLITE_MAGIC:
            raise ValueError(f"{path} is not a SQLite database")
    directory = path.absolute().parent
    while not directory.exists():
        directory = directory.parent
    if not directory.is_dir():
        raise ValueError(f"cannot make the directory of {path}: {directory} is not a "
                         f"directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write in {directory}: permission denied")
    # os.access says yes to root everywhere; a file made and removed at once also
    # catches a read-only file system.
    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".a2a-gateway-preflight-"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write in {directory}: {exc.strerror or exc}") from None
