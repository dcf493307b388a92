"""A config that names a valid file for every file-bearing option of the schema, and the
faults the preflight matrix puts into one of them at a time."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from jwt.algorithms import ECAlgorithm

from tests.support.auth_pki import issue, make_ca

# Every file-bearing field of the config models, by (model, field): a new one must be
# added to the matrix (tests/preflight/test_preflight_matrix.py checks this list against
# the models).
FILE_FIELDS = {
    ("CardSigningConfig", "key_file"): "card_signing.key_file",
    ("ServerTlsConfig", "cert_file"): "auth.server_tls.cert_file",
    ("ServerTlsConfig", "key_file"): "auth.server_tls.key_file",
    ("ServerTlsConfig", "client_ca_file"): "auth.server_tls.client_ca_file",
    ("ClientTlsConfig", "ca_file"): "auth.backend_tls.ca_file",
    ("ClientTlsConfig", "cert_file"): "auth.backend_tls.cert_file",
    ("ClientTlsConfig", "key_file"): "auth.backend_tls.key_file",
    ("ApiKeyEntry", "key_file"): "auth.api_keys.keys.0.key_file",
    ("JwtConfig", "jwks_file"): "auth.jwt.jwks_file",
    ("SecretSource", "file"): "tenants.a.auth.backend_auth.bearer.file",
    ("StateConfig", "path"): "state.path",
}
# Further options in the matrix: the same models at other places, and the files a
# rediss:// state URL names in its query.
MORE_OPTIONS = ["tenants.b.auth.api_keys.keys.0.key_file",
                "tenants.b.auth.backend_auth.api_key.file",
                "tenants.c.auth.backend_auth.oauth.client_secret.file",
                "tenants.c.auth.backend_tls.ca_file"]
REDIS_OPTIONS = ["state.url (ssl_ca_certs)", "state.url (ssl_certfile)",
                 "state.url (ssl_keyfile)"]
MATRIX_OPTIONS = [*FILE_FIELDS.values(), *MORE_OPTIONS, *REDIS_OPTIONS]

GARBAGE = b"\x00\xff\xfe garbage \x80\x81 {not PEM, not JSON, not UTF-8\n"
AS_ROOT = os.geteuid() == 0


def _backend(port: int) -> dict[str, Any]:
    return {"url": f"http://127.0.0.1:{port}/", "version": "0.3"}


def full_config(tmp: Path, *, redis: bool = False) -> tuple[dict[str, Any], dict[str, Path]]:
    """A valid config naming a file of its own for every option of MATRIX_OPTIONS (the
    redis ones with ``redis``), and those files by option."""
    ca = make_ca()
    server, client = issue(ca, "gateway", server=True), issue(ca, "gateway-client")
    signing = make_ca("card signer")
    jwk = json.loads(ECAlgorithm.to_jwk(make_ca("issuer").key.public_key()))
    db = tmp / "state.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.close()
    contents: dict[str, bytes | None] = {
        "card_signing.key_file": signing.key_pem,
        "auth.server_tls.cert_file": server.cert_pem,
        "auth.server_tls.key_file": server.key_pem,
        "auth.server_tls.client_ca_file": ca.cert_pem,
        "auth.backend_tls.ca_file": ca.cert_pem,
        "auth.backend_tls.cert_file": client.cert_pem,
        "auth.backend_tls.key_file": client.key_pem,
        "auth.api_keys.keys.0.key_file": b"a-key-of-the-gateway\n",
        "auth.jwt.jwks_file": json.dumps({"keys": [jwk]}).encode(),
        "tenants.a.auth.backend_auth.bearer.file": b"bearer-token\n",
        "tenants.b.auth.api_keys.keys.0.key_file": b"a-key-of-tenant-b\n",
        "tenants.b.auth.backend_auth.api_key.file": b"backend-key\n",
        "tenants.c.auth.backend_auth.oauth.client_secret.file": b"client-secret\n",
        "tenants.c.auth.backend_tls.ca_file": ca.cert_pem,
        "state.url (ssl_ca_certs)": ca.cert_pem,
        "state.url (ssl_certfile)": client.cert_pem,
        "state.url (ssl_keyfile)": client.key_pem,
        "state.path": None,  # the SQLite file made above
    }
    files: dict[str, Path] = {"state.path": db}
    for n, (option, data) in enumerate(contents.items()):
        if data is not None:
            files[option] = tmp / f"f{n}-{option.rpartition('.')[2].replace(' ', '')}"
            files[option].write_bytes(data)
            files[option].chmod(0o600)  # secret files readable by others draw a warning
    f = {k: str(v) for k, v in files.items()}
    config: dict[str, Any] = {
        "listen": {"http": "127.0.0.1:1"}, "workers": 1,
        "public_url": "https://gateway.example",
        "card_signing": {"key_file": f["card_signing.key_file"]},
        "auth": {
            "server_tls": {"cert_file": f["auth.server_tls.cert_file"],
                           "key_file": f["auth.server_tls.key_file"],
                           "client_ca_file": f["auth.server_tls.client_ca_file"]},
            "backend_tls": {"ca_file": f["auth.backend_tls.ca_file"],
                            "cert_file": f["auth.backend_tls.cert_file"],
                            "key_file": f["auth.backend_tls.key_file"]},
            "api_keys": {"keys": [{"principal": "p",
                                   "key_file": f["auth.api_keys.keys.0.key_file"]}]},
            "jwt": {"jwks_file": f["auth.jwt.jwks_file"]}},
        "tenants": {
            "a": {"backend": _backend(1), "auth": {"backend_auth": {
                "mode": "replace",
                "bearer": {"file": f["tenants.a.auth.backend_auth.bearer.file"]}}}},
            "b": {"backend": _backend(2), "auth": {
                "api_keys": {"keys": [{"principal": "q", "key_file":
                                       f["tenants.b.auth.api_keys.keys.0.key_file"]}]},
                "backend_auth": {"mode": "replace", "api_key": {
                    "file": f["tenants.b.auth.backend_auth.api_key.file"]}}}},
            "c": {"backend": _backend(3), "auth": {
                "backend_tls": {"ca_file": f["tenants.c.auth.backend_tls.ca_file"]},
                "backend_auth": {"mode": "replace", "oauth": {
                    "token_url": "https://idp.example/token", "client_id": "gw",
                    "client_secret": {"file": f[
                        "tenants.c.auth.backend_auth.oauth.client_secret.file"]}}}}}},
        "state": {"path": f["state.path"]},
    }
    if redis:
        config["state"] = {"backend": "redis", "url": (
            f"rediss://127.0.0.1:1/0?ssl_ca_certs={f['state.url (ssl_ca_certs)']}"
            f"&ssl_certfile={f['state.url (ssl_certfile)']}"
            f"&ssl_keyfile={f['state.url (ssl_keyfile)']}")}
    return config, files


def make_missing(path: Path) -> None:
    path.unlink()


def make_corrupt(path: Path) -> None:
    path.write_bytes(GARBAGE)


def make_unreadable(path: Path) -> None:
    """chmod 000; as root (who reads such a file anyway), a directory in its place."""
    if AS_ROOT:
        path.unlink()
        path.mkdir()
    else:
        path.chmod(0)

