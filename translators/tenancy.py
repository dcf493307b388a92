"""Which tenant a call is for (reference §4.7).

A client names its tenant in the URL path (`/{tenant}/...`, both versions), in gRPC
metadata (`x-a2a-tenant`), or in the v1.0 request's `tenant` field. When the path or the
metadata names one, that is the tenant the caller reached (and, with authentication, the
one it was admitted to): a `tenant` field that says otherwise is an error, never a switch.
"""

from __future__ import annotations

from google.protobuf.message import Message as ProtoMessage

from translators.errors import invalid_params


def request_tenant(request: ProtoMessage, named: str | None,
                   where: str = "path") -> str | None:
    """The call's tenant: ``named`` (from the path or metadata) or the request's `tenant`
    field; InvalidParams when both are given and differ."""
    field = str(getattr(request, "tenant", "") or "")
    if named and field and field != named:
        raise invalid_params(f"the request's tenant field {field[:64]!r} differs from the "
                             f"tenant {named!r} its {where} names; a call cannot switch "
                             f"tenants", tenant=named)
    return named or field or None
