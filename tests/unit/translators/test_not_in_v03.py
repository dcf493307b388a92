"""operations.not_in_v03: the one refusal of an operation v0.3 has no form for, as every
v0.3 side gives it (JSON-RPC and gRPC dialects, J03 and P03 rules, REST routes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from translators import operations as ops
from translators.dialects.grpc import wire_method
from translators.dialects.jsonrpc import JSONRPC_V03
from translators.errors import A2AError
from translators.j03.requests import j03_rules
from translators.loss import LossReport
from translators.p03.requests import p03_rules
from translators.rest_routes import route_for
from translators.versions import V03

TEXT = "ListTasks does not exist in A2A v0.3 and the backend speaks v0.3"


def test_only_list_tasks_has_no_v03_form() -> None:
    assert [op.name for op in ops.OPERATIONS if op.jsonrpc_v03 is None] == [ops.LIST_TASKS]
    assert [op.name for op in ops.OPERATIONS if op.grpc_v03 is None] == [ops.LIST_TASKS]


def test_the_refusal() -> None:
    err = ops.not_in_v03(ops.LIST_TASKS)
    assert (err.name, err.message) == ("UnsupportedOperationError", TEXT)


LIST = ops.BY_NAME[ops.LIST_TASKS]
SITES: dict[str, Callable[[], object]] = {
    "jsonrpc dialect": lambda: JSONRPC_V03.method(LIST),
    "grpc dialect": lambda: wire_method(LIST, V03),
    "j03 rules": lambda: j03_rules(ops.LIST_TASKS).params_to_j03({}, LossReport()),
    "p03 rules": lambda: p03_rules(ops.LIST_TASKS),
    "rest routes": lambda: route_for(ops.LIST_TASKS, V03),
}


@pytest.mark.parametrize("site", sorted(SITES))
def test_every_v03_side_gives_the_same_refusal(site: str) -> None:
    with pytest.raises(A2AError) as caught:
        SITES[site]()
    assert (caught.value.name, caught.value.message) == ("UnsupportedOperationError", TEXT)
