"""Doctor fixtures: the official SDK agents (0.3.26 and 1.3.0) as real processes on
loopback, every binding each serves, started once for the directory's tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.helpers import PEERS, SDK_PYTHON, free_port, running
from tests.support.interop_support import Agent  # the interop tests' own agent record


def _start(stack: ExitStack, version: str, logs: Path) -> Agent:
    agent = Agent(version, free_port(), free_port(), free_port())
    script = PEERS / ("agent_v03.py" if version == "0.3" else "agent_v10.py")
    cmd = [str(SDK_PYTHON[version]), str(script), "--jsonrpc-port", str(agent.jsonrpc),
           "--rest-port", str(agent.rest), "--grpc-port", str(agent.grpc)]
    stack.enter_context(running(cmd, agent.jsonrpc, log=logs / f"agent-{version}.log",
                                timeout=90))
    return agent


@pytest.fixture(scope="session")
def sdk_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Agent]]:
    for version, python in SDK_PYTHON.items():
        if not python.exists():
            pytest.skip(f"missing SDK venv for {version}: run `make venvs`")
    logs = tmp_path_factory.mktemp("doctor-agents")
    with ExitStack() as stack:
        yield {v: _start(stack, v, logs) for v in ("0.3", "1.0")}
