"""versions.declared_version and versions.is_major_1: what a client's A2A-Version says
before its payload does, read by one rule wherever an answer's shape hangs on it (the
JSON-RPC refusal of a body that does not parse, the REST path reading, the gRPC v1.0.0-rc
refusal)."""

from __future__ import annotations

import pytest

from translators.dialects import grpc, jsonrpc
from translators.dialects.contract import Refusal
from translators.rest_routes import dialect_of_path
from translators.versions import (
    V03,
    V10,
    VersionRules,
    declared_version,
    is_major_1,
    normalize_version,
)

# The header as sent → (declared_version, is_major_1 of its normalized form).
CASES: list[tuple[str | None, str, bool]] = [
    (None, V03, False), ("", V03, False), ("0.3", V03, False), ("0.3.0", V03, False),
    ("1.0", V10, True), ("1.0.1", V10, True), (" 01.00 ", V10, True),
    ("1.1", V03, True), ("1.9", V03, True), ("1.x", V03, True),
    ("2.0", V03, False), ("10.0", V03, False), ("abc", V03, False),
]


@pytest.mark.parametrize(("header", "declared", "major_1"), CASES)
def test_the_rules(header: str | None, declared: str, major_1: bool) -> None:
    assert declared_version(header) == declared
    assert is_major_1(normalize_version(header)) is major_1


@pytest.mark.parametrize(("header", "declared", "major_1"), CASES)
def test_jsonrpc_refuses_a_bad_body_in_the_declared_version(
        header: str | None, declared: str, major_1: bool) -> None:
    with pytest.raises(Refusal) as caught:
        jsonrpc.decode_call(b"{not json", header, None, VersionRules())
    assert caught.value.codec.dialect.version == declared
    assert caught.value.error.name == "JSONParseError"


@pytest.mark.parametrize(("header", "declared", "major_1"), CASES)
def test_rest_reads_v1_paths_by_major_1(header: str | None, declared: str,
                                       major_1: bool) -> None:
    assert dialect_of_path("/v1/nowhere", normalize_version(header)) == (
        V10 if major_1 else V03)


@pytest.mark.parametrize(("header", "declared", "major_1"), CASES)
def test_grpc_v03_service_refuses_a_1x_caller(header: str | None, declared: str,
                                             major_1: bool) -> None:
    method = grpc.wire_methods(V03)["GetTask"]
    try:
        grpc.decode_call(method, b"", header, None, VersionRules(), 1 << 20)
    except Refusal as no:
        refusal: Refusal[object] | None = no
    else:
        refusal = None
    rc = refusal is not None and "v1.0.0-rc" in refusal.error.message
    assert rc is major_1
    if major_1:
        assert refusal is not None and refusal.codec.dialect is grpc.GRPC_V10
