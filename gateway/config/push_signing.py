"""`tenants.<name>.push_signing:` Standard Webhooks signatures on the deliveries the push
relay makes for a tenant (docs/push-relay.md, "Signatures"). The secrets themselves are
never in the YAML: each key names a file or an environment variable (the `auth`
sections' convention), read when the gateway is built and checked by preflight."""

from __future__ import annotations

from pydantic import BaseModel, Field

from gateway.config.auth import SecretSource
from gateway.config.strict import STRICT


class PushSigningConfig(BaseModel):
    """Sign every relayed delivery (`webhook-signature`), besides the A2A token."""

    model_config = STRICT

    keys: list[SecretSource] = Field(
        min_length=1, description="Where each signing secret (`whsec_` + base64 of 24 to "
        "64 random bytes; `a2a-gateway keygen webhook` makes one) is read: a file or an "
        "environment variable. Every delivery is signed with each key, so put a new key "
        "first and drop the old one once receivers have it")
