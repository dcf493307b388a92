"""Index of the interop seed scenarios I1-I14 (/work/shared/seeds, reference §6) and the
tests that prove each one. Every test named here must exist, and carry its seed in its
name (`i1_` ... `i14_`), so `pytest -k i7_` runs one seed. S: the gateway as the server
the seed talks to; C: the gateway as the client (discovery, egress).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED_SCENARIOS = "tests/interop/test_seed_scenarios.py"

SEEDS: dict[str, tuple[str, list[str]]] = {
    "I1": ("S: the same message over every binding the card declares", [
        f"{SEED_SCENARIOS}::test_i1_same_message_over_every_declared_binding"]),
    "I2": ("S: the same failure (unknown task) over every binding", [
        f"{SEED_SCENARIOS}::test_i2_task_not_found_over_every_binding",
        "tests/interop/test_grpc_interop.py::test_i2_task_not_found_over_grpc_for_every_backend",
        "tests/integration/test_grpc.py::test_i2_unknown_task_over_grpc_is_not_found_with_error_info",
        "tests/integration/test_rest.py::test_i2_not_found_is_404_with_error_info"]),
    "I3": ("S: a 1.0-only interface called without A2A-Version", [
        "tests/integration/test_cards.py::test_i3_i4_i5_i6_version_negotiation"]),
    "I4": ("S: A2A-Version 1.0, then 9.9", [
        "tests/integration/test_cards.py::test_i3_i4_i5_i6_version_negotiation"]),
    "I5": ("S: A2A-Version 1.0.1", [
        "tests/integration/test_cards.py::test_i3_i4_i5_i6_version_negotiation"]),
    "I6": ("S: a2a-version as an HTTP header and as gRPC metadata", [
        "tests/integration/test_cards.py::test_i3_i4_i5_i6_version_negotiation",
        "tests/integration/test_grpc.py::test_i6_a2a_version_metadata_is_read_like_the_header",
        "tests/interop/test_grpc_interop.py::test_i6_a2a_version_metadata_like_the_header"]),
    "I7": ("S: A2A-Extensions with two URIs; a required extension omitted", [
        "tests/integration/test_cards.py::test_i7_extensions"]),
    "I8": ("S: tenant by field and by /{tenant} prefix over HTTP+JSON", [
        f"{SEED_SCENARIOS}::test_i8_tenant_prefix_and_field",
        "tests/integration/test_rest.py::test_i8_tenant_prefix_and_tenant_field_reach_the_same_tenant"]),
    "I9": ("C: a card listing JSONRPC then GRPC, read by a client of one binding", [
        "tests/integration/test_cards.py::test_i9_i10_interface_choice"]),
    "I10": ("C: a card with a 0.3 and a 1.0 entry for one binding", [
        "tests/integration/test_cards.py::test_i9_i10_interface_choice"]),
    "I11": ("S: stream framing over JSON-RPC and HTTP+JSON", [
        f"{SEED_SCENARIOS}::test_i11_stream_framing_per_binding",
        "tests/integration/test_rest.py::test_i11_rest_stream_lines_are_bare_stream_responses"]),
    "I12": ("S: GET /tasks with contextId, status and pageSize", [
        f"{SEED_SCENARIOS}::test_i12_list_tasks_filters_and_page_size"]),
    "I13": ("S: an unknown field in a request is ignored", [
        f"{SEED_SCENARIOS}::test_i13_unknown_fields_ignored_and_not_forwarded",
        "tests/integration/test_rest.py::test_i13_unknown_fields_are_ignored"]),
    "I14": ("C: subscribe over HTTP+JSON; on a method error, the other verb", [
        "tests/integration/test_seed_i14.py::test_i14_subscribe_retries_with_the_other_verb_on_405",
        "tests/integration/test_seed_i14.py::test_i14_the_configured_verb_alone_when_the_backend_accepts_it",
        f"{SEED_SCENARIOS}::test_i14_subscribe_to_a_get_only_sdk_backend"]),
}


def _test_functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")}


def test_every_seed_has_tests() -> None:
    assert sorted(SEEDS, key=lambda s: int(s[1:])) == [f"I{n}" for n in range(1, 15)]


@pytest.mark.parametrize("seed", list(SEEDS))
def test_seed_tests_exist_and_are_named_for_the_seed(seed: str) -> None:
    for ref in SEEDS[seed][1]:
        path, _, name = ref.partition("::")
        assert name in _test_functions(path), f"{seed}: {ref} does not exist"
        assert f"_{seed.lower()}_" in name, f"{seed}: {name} does not carry `{seed.lower()}_`"
