"""TLS contexts from config: the listeners' (server; mTLS when a client CA is given) and
toward backends (client), with rotated files picked up without a restart, and the gRPC
credentials built from the same settings.

Reload: ``ReloadingServerContext.maybe_reload()`` re-reads the certificate and key when
a file's mtime changed, with ``load_cert_chain`` on the same ``SSLContext`` (new
handshakes use the new pair; open connections keep theirs). A changed client CA bundle
is added to the trusted set; a CA removed from the bundle stays trusted until restart.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Callable

import grpc
import structlog

from gateway.config.tls import ClientTlsConfig, ServerTlsConfig

log = structlog.get_logger("a2a_gateway.tls")

_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def _mtime(path: str | None) -> float | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime_ns / 1e9
    except OSError:
        return None


def server_context(config: ServerTlsConfig) -> ssl.SSLContext:
    """The listeners' context: the certificate and key, and, with `client_ca_file`, client
    certificates checked against it (CERT_REQUIRED, or CERT_OPTIONAL)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = _VERSIONS[config.min_version]
    ctx.load_cert_chain(config.cert_file, config.key_file)
    if config.client_ca_file is not None and config.client_auth != "none":
        ctx.load_verify_locations(cafile=config.client_ca_file)
        ctx.verify_mode = (ssl.CERT_REQUIRED if config.client_auth == "required"
                           else ssl.CERT_OPTIONAL)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def client_context(config: ClientTlsConfig | None) -> ssl.SSLContext:
    """A context toward backends: their certificate verified against `ca_file` (else the
    system's CAs) and their host name; a client certificate when configured."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if config is None:
        return ctx
    if config.ca_file is not None:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=config.ca_file)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if config.cert_file is not None and config.key_file is not None:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    return ctx


class ReloadingServerContext:
    """A server context whose files are re-read when they change."""

    def __init__(self, config: ServerTlsConfig) -> None:
        self.config = config
        self.context = server_context(config)
        self._stamps = self._read_stamps()
        self.reloads = 0

    def _read_stamps(self) -> tuple[float | None, ...]:
        c = self.config
        return (_mtime(c.cert_file), _mtime(c.key_file), _mtime(c.client_ca_file))

    def maybe_reload(self) -> bool:
        """Re-read changed files into the same context; True when it did. A pair that
        does not load (a half-written rotation) is logged and the old one kept."""
        stamps = self._read_stamps()
        if stamps == self._stamps:
            return False
        c = self.config
        try:
            if stamps[:2] != self._stamps[:2]:
                self.context.load_cert_chain(c.cert_file, c.key_file)
            if stamps[2] != self._stamps[2] and c.client_ca_file is not None \
                    and c.client_auth != "none":
                self.context.load_verify_locations(cafile=c.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            log.warning("tls files not reloaded", cert_file=c.cert_file, detail=str(exc))
            return False
        self._stamps = stamps
        self.reloads += 1
        log.info("tls files reloaded", cert_file=c.cert_file)
        return True

    async def watch(self) -> None:
        """Check the files every `reload_interval` seconds until cancelled."""
        if self.config.reload_interval <= 0:
            return
        while True:
            await asyncio.sleep(self.config.reload_interval)
            self.maybe_reload()


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def grpc_server_credentials(config: ServerTlsConfig) -> grpc.ServerCredentials:
    """The gRPC listener's credentials; the files are re-read when they change (gRPC asks
    before each new connection's handshake).

    grpcio's server has two client-certificate modes only: not asked for (its Python API
    passes GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE whenever require_client_auth is false,
    root certificates or not), or required and verified. HTTPS's CERT_OPTIONAL cannot be
    had; `client_auth: optional` therefore requires one on gRPC unless
    `grpc_client_auth: none` says otherwise (README "mTLS on the gRPC listener")."""
    require = config.grpc_requires_client_cert

    def current() -> grpc.ServerCertificateConfiguration:
        pair = [(_read(config.key_file) or b"", _read(config.cert_file) or b"")]
        ca = _read(config.client_ca_file) if require else None
        return grpc.ssl_server_certificate_configuration(pair, ca)

    stamps = [_mtime(config.cert_file), _mtime(config.key_file), _mtime(config.client_ca_file)]

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        now = [_mtime(config.cert_file), _mtime(config.key_file),
               _mtime(config.client_ca_file)]
        if now == stamps:
            return None
        try:
            fresh = current()
        except OSError as exc:
            log.warning("grpc tls files not reloaded", detail=str(exc))
            return None
        stamps[:] = now
        return fresh

    if require and config.client_auth == "optional":
        log.info("grpc listener requires a client certificate", client_auth="optional",
                 reason="grpc cannot ask for one without requiring it; "
                        "server_tls.grpc_client_auth: none turns it off")
    fetcher: Callable[[], grpc.ServerCertificateConfiguration | None] = fetch
    return grpc.dynamic_ssl_server_credentials(current(), fetcher, require)


def grpc_channel_credentials(config: ClientTlsConfig | None) -> grpc.ChannelCredentials:
    """Credentials of a secure channel toward a gRPC backend."""
    if config is None:
        return grpc.ssl_channel_credentials()
    return grpc.ssl_channel_credentials(root_certificates=_read(config.ca_file),
                                        private_key=_read(config.key_file),
                                        certificate_chain=_read(config.cert_file))


def grpc_channel_options(config: ClientTlsConfig | None) -> list[tuple[str, str]]:
    """Channel options that go with the credentials (the name checked in the backend's
    certificate, when it is not the target's host)."""
    if config is None or config.server_name is None:
        return []
    return [("grpc.ssl_target_name_override", config.server_name)]
