"""Who called, and the refusals the auth modules raise (the project's A2A error kinds,
which render per dialect: 401 / UNAUTHENTICATED, 403 / PERMISSION_DENIED, 429 /
RESOURCE_EXHAUSTED). Messages say why a credential was refused, never what it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gateway.call import Principal as Principal  # who called: a fact of the call
from translators.errors import A2AError, a2a_error

# Metadata key of the WWW-Authenticate challenge an HTTP ingress sends with a 401.
CHALLENGE_KEY = "www_authenticate"

Headers = Mapping[str, str] | Mapping[str, Sequence[str]] | Mapping[str, str | Sequence[str]]


def lower_headers(headers: Headers) -> dict[str, str]:
    """Header (or gRPC metadata) names lowercased, the first value of each."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in out:
            continue
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bytes):
            continue  # binary metadata carries no credential
        elif value:
            first = value[0]
            if isinstance(first, str):
                out[key] = first
    return out


def challenge(schemes: Sequence[str], realm: str, error: str | None = None,
              description: str | None = None) -> str:
    """A WWW-Authenticate value (RFC 6750 §3): one challenge per scheme accepted."""
    parts = []
    for scheme in schemes:
        params = [f'realm="{realm}"']
        if error is not None and scheme == "Bearer":
            params.append(f'error="{error}"')
            if description:
                clean = description.replace('"', "'").replace("\\", "/")
                params.append(f'error_description="{clean}"')
        parts.append(f"{scheme} {', '.join(params)}")
    return ", ".join(parts)


def unauthenticated(failure: str, message: str, schemes: Sequence[str], realm: str,
                    ) -> A2AError:
    """An UnauthenticatedError for ``failure`` (missing, malformed, expired, ...); the
    challenge names `invalid_request` for a malformed credential, `invalid_token` for a
    refused one and no error when none was sent (RFC 6750 §3.1)."""
    error = (None if failure == "missing" else
             "invalid_request" if failure == "malformed" else "invalid_token")
    value = challenge(schemes or ["Bearer"], realm, error, message if error else None)
    return a2a_error("UnauthenticatedError", message, failure=failure,
                     **{CHALLENGE_KEY: value})


def permission_denied(message: str, tenant: str | None) -> A2AError:
    return a2a_error("PermissionDeniedError", message, tenant=tenant or "")
