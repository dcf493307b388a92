"""Reading A2A-Version (reference §1, seed table "How a server reads A2A-Version")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from translators.errors import A2AError, a2a_error

# The versions a dialect speaks (a negotiated version is one of them).
Version = Literal["0.3", "1.0"]
V03: Final = "0.3"
V10: Final = "1.0"
KNOWN_VERSIONS = (V10, V03)
# What a v0.3 card says it speaks (Major.Minor.Patch); v1.0 interfaces say Major.Minor.
V03_CARD_VERSION = "0.3.0"


def normalize_version(raw: str | None) -> str:
    """Major.Minor of a header value; empty or absent means 0.3 (spec §3.6.2).

    Patch numbers must not take part in negotiation (§3.6), so ``1.0.1`` is ``1.0``.
    Anything that is not digits-dot-digits is returned as given, to be refused.
    """
    if raw is None:  # no header (v0.3 clients): before the look-up, where None == str
        return V03  # takes the slow way of rich comparison
    if raw in KNOWN_VERSIONS:  # nearly every call: what it says is the answer
        return raw
    value = (raw or "").strip()
    if not value:
        return V03
    match = _MAJOR_MINOR.match(value)
    if match is not None:
        return f"{int(match[1])}.{int(match[2])}"
    # Echoed in the refusal: keep it short and printable.
    shown = "".join(c if c.isprintable() else "?" for c in value[:_SHOWN])
    return shown + ("..." if len(value) > _SHOWN else "")


def as_version(value: str) -> Version:
    """A version a dialect speaks; anything else is ValueError (a version a call
    negotiated, the config validated or a record of ours kept always is one)."""
    if value == V10:
        return V10
    if value == V03:
        return V03
    raise ValueError(f"no dialect speaks A2A version {value[:32]!r}")


def declared_version(raw: str | None) -> Version:
    """The version a client's A2A-Version names, for an answer given before its payload
    said one: 1.0, or else 0.3 (absent means 0.3, spec §3.6.2; one not served, too)."""
    return V10 if normalize_version(raw) == V10 else V03


def is_major_1(version: str) -> bool:
    """Whether a normalized version is 1.x: its client reads v1.0 paths and shapes, even
    for a 1.x this gateway does not serve (1.9 is refused in the v1.0 shape)."""
    return _MAJOR_1.match(version) is not None


_MAJOR_1 = re.compile(r"0*1\.", re.ASCII)
# Major.Minor, then anything after a dot (a patch number, which takes no part). Bounded:
# a version is a few digits, and int() of thousands of them is refused by Python.
_MAJOR_MINOR = re.compile(r"(\d{1,6})\.(\d{1,6})(?:\.|$)")
_SHOWN = 32


def version_not_supported(requested: str, supported: tuple[str, ...]) -> A2AError:
    return a2a_error(
        "VersionNotSupportedError",
        f"Protocol version {requested} is not supported. Supported: {', '.join(supported)}",
        requested=requested,
        supported=",".join(supported),
    )


@dataclass(frozen=True)
class VersionRules:
    supported: tuple[str, ...] = KNOWN_VERSIONS
    # Strict: the version the payload speaks must be the one the header declares.
    strict: bool = False


def negotiate(header_value: str | None, payload_version: str, rules: VersionRules) -> str:
    """The version a call is served in, or VersionNotSupportedError.

    ``payload_version`` is what the method name, path or gRPC package says. Method names
    do not overlap between versions, so by default the payload decides and the header only
    has to be a version we serve; a v1.0 method without a header is accepted (lenient,
    reference §1 "Inbound"). Strict mode applies spec §3.6.2 literally.
    """
    declared = normalize_version(header_value)
    if declared not in rules.supported:
        raise version_not_supported(declared, rules.supported)
    if payload_version not in rules.supported:
        raise version_not_supported(payload_version, rules.supported)
    if rules.strict and declared != payload_version:
        raise version_not_supported(declared, (payload_version,))
    return payload_version
