"""The principal a client certificate names: subject CN or a SAN, from every form an
ingress has the certificate in."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization

from gateway.auth.mtls import cert_principal
from gateway.config.auth import MtlsConfig
from tests.support.auth_pki import issue, make_ca

CA = make_ca()
CLIENT = issue(CA, "billing-agent", dns=("billing.internal",),
               uris=("spiffe://corp/billing",), emails=("ops@corp.test",))


def test_principal_from_der_pem_and_dict() -> None:
    der = CLIENT.cert.public_bytes(serialization.Encoding.DER)
    as_dict = {"subject": ((("countryName", "XX"),), (("commonName", "billing-agent"),)),
               "subjectAltName": (("DNS", "billing.internal"),
                                  ("URI", "spiffe://corp/billing"),
                                  ("email", "ops@corp.test"))}
    expected = {"subject_cn": "billing-agent", "san_dns": "billing.internal",
                "san_uri": "spiffe://corp/billing", "san_email": "ops@corp.test"}
    for source, name in expected.items():
        cfg = MtlsConfig(principal_from=source)  # type: ignore[arg-type]
        for cert in (der, CLIENT.cert_pem, as_dict):
            principal = cert_principal(cfg, cert, "t")
            assert principal is not None and principal.name == name, (source, type(cert))
            assert principal.method == "mtls" and principal.tenants == {"t"}


def test_no_certificate_or_no_such_name() -> None:
    cfg = MtlsConfig(principal_from="san_uri")
    assert cert_principal(cfg, None) is None
    assert cert_principal(cfg, {}) is None
    assert cert_principal(cfg, issue(CA, "plain").cert_pem) is None
    assert cert_principal(cfg, b"not a certificate") is None
