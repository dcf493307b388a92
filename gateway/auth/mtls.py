"""The principal a verified client certificate names (the TLS layer verified it against
`server_tls.client_ca_file`; this only reads it). The certificate comes as Python's
`getpeercert()` dict, as DER bytes (`getpeercert(binary_form=True)`) or as PEM (gRPC's
auth context `x509_pem_cert`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from gateway.auth.principal import Principal
from gateway.call import PeerCert as PeerCert
from gateway.config.auth import MtlsConfig

_SAN_KIND = {"san_dns": "DNS", "san_uri": "URI", "san_email": "email"}


def _from_dict(cert: Mapping[str, Any], what: str) -> str | None:
    if what == "subject_cn":
        for rdn in cert.get("subject", ()):
            for name, value in rdn:
                if name == "commonName" and isinstance(value, str):
                    return value
        return None
    kind = _SAN_KIND[what]
    for name, value in cert.get("subjectAltName", ()):
        if name == kind and isinstance(value, str):
            return value
    return None


def _from_x509(cert: x509.Certificate, what: str) -> str | None:
    if what == "subject_cn":
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        value = names[0].value if names else None
        return value if isinstance(value, str) else None
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    if what == "san_dns":
        values = san.get_values_for_type(x509.DNSName)
    elif what == "san_uri":
        values = san.get_values_for_type(x509.UniformResourceIdentifier)
    else:
        values = san.get_values_for_type(x509.RFC822Name)
    first = values[0] if values else None
    return first if isinstance(first, str) else None


def _load(raw: bytes) -> x509.Certificate | None:
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            return x509.load_pem_x509_certificate(raw)
        return x509.load_der_x509_certificate(raw)
    except ValueError:
        return None


def cert_principal(config: MtlsConfig, cert: PeerCert,
                   bound_tenant: str | None = None) -> Principal | None:
    """The principal ``cert`` names, or None (no certificate, or it lacks the name)."""
    if not cert:
        return None
    if isinstance(cert, bytes):
        loaded = _load(cert)
        name = _from_x509(loaded, config.principal_from) if loaded is not None else None
    else:
        name = _from_dict(cert, config.principal_from)
    if not name:
        return None
    tenants = frozenset({bound_tenant}) if bound_tenant is not None else None
    return Principal(name, "mtls", frozenset(), tenants)
