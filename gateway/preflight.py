"""What a config needs beyond its own text: key files that must exist and parse, keys
in the environment. `check-config`, `serve` and every reload run these checks, so a config
that would fail while the gateway is being built is refused with the YAML path named,
before anything is started or swapped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gateway.cards.signing import CardSigner
from gateway.config import ConfigError, GatewayConfig
from gateway.relay.seals import load_keys


def _check(path: str, build: Callable[[], object]) -> None:
    try:
        build()
    except ConfigError:
        raise
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {exc.filename or 'the file'}: "
                          f"{exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def preflight(config: GatewayConfig, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError for what would make building the gateway from ``config`` fail."""
    signing = config.card_signing
    if signing is not None:
        _check("card_signing.key_file", lambda: CardSigner(signing))
    _check("push_relay.keys", lambda: load_keys(config.push_relay, environ))
