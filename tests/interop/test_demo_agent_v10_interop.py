"""The official a2a-sdk 1.x client straight to the demo agent serving v1.0 (`demo-agent
--protocol 1.0`), no gateway between: it gets what it gets from the official SDK's own
v1.0 agent (tests/interop/peers/agent_v10.py, which answers by the same keywords), every
scenario of client_v10.py, ListTasks paging too. Only names and ids differ."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tests.support.interop_support import Deployment, run_client

# Generated ids (uuid4, with or without dashes): one run's, not the agent's behaviour.
_ID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")


def _same_run(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _same_run(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same_run(v) for v in value]
    return "<id>" if isinstance(value, str) and _ID.fullmatch(value) else value


def _direct(port: int, scenario: str) -> dict[str, Any]:
    results: dict[str, Any] = run_client("1.0", f"http://127.0.0.1:{port}/", "JSONRPC",
                                         scenario)
    return results


@pytest.fixture(scope="module")
def runs(deployment: Deployment) -> dict[str, dict[str, Any]]:
    """Every scenario, and ListTasks paging, against the demo agent and the SDK's agent."""
    out: dict[str, dict[str, Any]] = {}
    for who, port in (("demo", deployment.demo10), ("sdk", deployment.agents["1.0"].jsonrpc)):
        out[who] = {**_direct(port, "all"), **_direct(port, "list_paging")}
    return out


def test_answers_like_the_sdk_agent(runs: dict[str, dict[str, Any]]) -> None:
    demo, sdk = copy.deepcopy(runs["demo"]), copy.deepcopy(runs["sdk"])
    # What is the agent's own: its name and skills, the wording of one refusal.
    assert demo.pop("extended_card") == {
        "name": "a2a-gateway demo agent",
        "skills": ["echo", "task", "stream", "input", "slow", "secret-skill"]}
    assert sdk.pop("extended_card")["skills"][-1] == "secret-skill"
    for results in (demo, sdk):
        assert results["bad_token"]["error"]["type"] == "InvalidParamsError"
        del results["bad_token"]
        # What depends on timing, not on the agent: how much of a task had happened by
        # the time the client looked (a subscription's events, the state after a send
        # that did not wait).
        assert results["cancel"].pop("afterSend") in ("submitted", "working")
        events = results["subscribe"].pop("events")
        assert events[-1] == {"type": "status", "state": "completed", "final": None}
    assert sorted(demo) == sorted(sdk)
    for scenario in sdk:
        assert _same_run(demo[scenario]) == _same_run(sdk[scenario]), scenario


def test_what_the_sdk_client_read(runs: dict[str, dict[str, Any]]) -> None:
    """The comparison above could pass with both wrong the same way: what they read."""
    demo = runs["demo"]
    assert demo["send_message"] == {"kind": "message", "role": "agent", "text": "echo: hello"}
    assert demo["send_task"]["state"] == "completed"
    assert demo["send_task"]["artifacts"][0]["parts"][0] == {"text": "built build"}
    assert demo["stream"]["reassembled"] == "chunk 0chunk 1chunk 2"
    assert demo["multi_turn"]["answer"] == "trip from Paris"
    assert demo["not_found"]["error"]["type"] == "TaskNotFoundError"
    assert demo["list_tasks"] == {"sameTasks": True, "states": ["completed", "completed"]}
    assert demo["subscribe"]["firstType"] == "task"
    assert demo["push_crud"]["created"]["scheme"] == "Bearer"
    assert [len(page) for page in demo["pages"]] == [2, 2, 2]
