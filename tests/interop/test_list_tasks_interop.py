"""ListTasks toward v0.3 agents (which have none), answered by the gateway from its task
index: the a2a-sdk 1.3.0 client on every binding, through the gateway, to the a2a-sdk
0.3.26 agent on every binding. Filters, paging to the end, historyLength,
includeArtifacts, a page token the gateway did not make (scenario `list_paging`,
peers/_client_common.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.interop_support import Deployment, run_client

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


def list_paging(deployment: Deployment, binding: str, tenant: str) -> dict[str, Any]:
    if binding == "GRPC":
        out = run_client("1.0", deployment.grpc_target(), binding, "list_paging",
                         tenant=tenant)
    else:
        out = run_client("1.0", deployment.url(tenant), binding, "list_paging")
    assert isinstance(out, dict) and "error" not in out, out
    return out


@pytest.mark.parametrize("tenant", ["a03", "r03", "g03"])
@pytest.mark.parametrize("binding", BINDINGS)
def test_list_tasks_of_a_v03_agent(deployment: Deployment, binding: str, tenant: str) -> None:
    got = list_paging(deployment, binding, tenant)
    done, working = got["done"], got["working"]
    # Newest status first: the working task, then the finished ones, last finished first;
    # pages of two to the end, each saying the total and the page size.
    assert [i for page in got["pages"] for i in page] == [working, *reversed(done)], got
    assert [len(p) for p in got["pages"]] == [2, 2, 2]
    assert got["totals"] == [6, 6, 6] and got["pageSizes"] == [2, 2, 2]
    only = got["working_only"]
    assert (only["ids"], only["states"], only["totalSize"]) == ([working], ["working"], 1)
    full = got["with_artifacts"]
    assert full["ids"] == list(reversed(done)) and set(full["states"]) == {"completed"}
    assert full["artifacts"] == [1] * 5 and full["history"] == [0] * 5
    short = got["history_1"]
    assert len(short["ids"]) == 6 and short["artifacts"] == [0] * 6
    assert set(short["history"]) == {1}, short
    assert (got["after_future"]["ids"], got["after_future"]["totalSize"]) == ([], 0)
    assert got["bad_token"]["error"]["type"] == "InvalidParamsError", got["bad_token"]
