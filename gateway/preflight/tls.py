"""TLS files: certificates, private keys and CA bundles exist, are PEM that parses, the
key is the certificate's, and the certificate is valid now. Each file is checked on its
own for a precise line; then the context `serve` builds is built from them (the same
function), so preflight and the listeners cannot disagree about a file."""

from __future__ import annotations

import datetime as dt
import ssl
from functools import partial
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from gateway.config.tls import ClientTlsConfig, ServerTlsConfig
from gateway.preflight.problems import Problems
from gateway.tls.context import client_context, server_context

MAX_PEM_BYTES = 1024 * 1024  # a PEM file larger than this is not a certificate chain


def read_pem(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_PEM_BYTES)


def load_certificates(path: str) -> list[x509.Certificate]:
    """Every certificate in ``path`` (PEM), in file order."""
    try:
        certs = x509.load_pem_x509_certificates(read_pem(path))
    except ValueError:
        raise ValueError(f"{path} holds no PEM certificate that parses") from None
    return certs


def check_valid_now(path: str, cert: x509.Certificate,
                    now: dt.datetime | None = None) -> None:
    now = now or dt.datetime.now(dt.UTC)
    if cert.not_valid_after_utc <= now:
        raise ValueError(f"the certificate in {path} expired on "
                         f"{cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    if cert.not_valid_before_utc > now:
        raise ValueError(f"the certificate in {path} is not valid before "
                         f"{cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC")


def load_private_key(path: str) -> PrivateKeyTypes:
    data = read_pem(path)
    try:
        return serialization.load_pem_private_key(data, None)
    except TypeError:
        raise ValueError(f"{path} holds an encrypted private key; the gateway reads "
                         f"keys without a password") from None
    except ValueError:
        raise ValueError(f"{path} holds no PEM private key that parses") from None


def _spki(key: PrivateKeyTypes | x509.Certificate) -> bytes:
    public = key.public_key()
    return public.public_bytes(serialization.Encoding.DER,
                               serialization.PublicFormat.SubjectPublicKeyInfo)


def check_ca_bundle(path: str) -> None:
    """A bundle of PEM CA certificates, as ssl loads it for verifying peers."""
    load_certificates(path)
    ssl.create_default_context(cafile=path)


def check_pair(problems: Problems, prefix: str, cert_file: str, key_file: str) -> bool:
    """``prefix``.cert_file and ``prefix``.key_file: both parse, the leaf certificate is
    valid now and the key is its key. True when nothing was wrong."""
    leaf: list[x509.Certificate] = []
    keys: list[PrivateKeyTypes] = []

    def cert() -> None:
        certs = load_certificates(cert_file)
        check_valid_now(cert_file, certs[0])
        leaf.append(certs[0])

    ok = problems.check(f"{prefix}.cert_file", cert)
    ok = problems.check(f"{prefix}.key_file",
                        lambda: keys.append(load_private_key(key_file))) and ok
    if leaf and keys and _spki(leaf[0]) != _spki(keys[0]):
        problems.add(f"{prefix}.key_file", f"{key_file} is not the key of the certificate "
                     f"in {cert_file}")
        ok = False
    return ok


def check_server_tls(problems: Problems, prefix: str, config: ServerTlsConfig) -> None:
    ok = check_pair(problems, prefix, config.cert_file, config.key_file)
    if config.client_ca_file is not None and config.client_auth != "none":
        ca = config.client_ca_file
        ok = problems.check(f"{prefix}.client_ca_file", lambda: check_ca_bundle(ca)) and ok
    if ok:  # the listeners' own loader has the last word
        problems.check(prefix, lambda: server_context(config))


def check_client_tls(problems: Problems, prefix: str, config: ClientTlsConfig) -> None:
    ok = True
    if config.cert_file is not None and config.key_file is not None:
        ok = check_pair(problems, prefix, config.cert_file, config.key_file)
    if config.ca_file is not None:
        ca = config.ca_file
        ok = problems.check(f"{prefix}.ca_file", lambda: check_ca_bundle(ca)) and ok
    if ok:  # the backend client's own loader has the last word
        problems.check(prefix, lambda: client_context(config))


# redis-py reads these from a rediss:// URL's query (state.url).
_REDIS_TLS_FILES = {"ssl_ca_certs": check_ca_bundle, "ssl_certfile": load_certificates,
                    "ssl_keyfile": load_private_key}


def check_redis_tls_files(problems: Problems, path: str, url: str) -> None:
    query = parse_qs(urlsplit(url).query)
    for name, check in _REDIS_TLS_FILES.items():
        for file in query.get(name, []):
            problems.check(f"{path} ({name})", partial(check, file))
