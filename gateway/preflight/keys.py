"""Keys: the card-signing key (an EC P-256 PEM key), the relay keys (base64 of 16, 24
or 32 bytes, from the config or the environment) and the tenants' webhook signing
secrets (`whsec_`, from files or the environment), each read by the loader `serve`
uses."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from gateway.cards.signing import CardSigner
from gateway.config.models import GatewayConfig
from gateway.preflight.problems import Problems
from gateway.preflight.tls import load_private_key
from gateway.relay.seals import load_keys
from gateway.relay.signing import load_signers


def check_keys(problems: Problems, config: GatewayConfig,
               environ: Mapping[str, str] | None) -> None:
    signing = config.card_signing
    if signing is not None:
        # The PEM parsed on its own first, for a clear line; then the signer serve uses.
        key_file = signing.key_file
        if problems.check("card_signing.key_file", partial(load_private_key, key_file)):
            problems.check("card_signing.key_file", partial(CardSigner, signing))
    relay = config.push_relay
    # `keys` themselves were checked when the config was parsed; what comes from the
    # environment variable is read here (it replaces them when set).
    problems.check("push_relay.keys_env", lambda: load_keys(relay, environ))
    # Each unusable signing secret is its own line (load_signers names the YAML path).
    problems.check("tenants", lambda: load_signers(config))
