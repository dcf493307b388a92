"""Interop plumbing. Real processes on loopback: the official a2a-sdk agents (0.3.26 and 1.3.0), the
gateway, and the official SDK clients, each SDK in its own virtualenv (.venvs/)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.helpers import PEERS, SDK_PYTHON, free_port, gateway_cmd, running, write_config


@dataclass
class Agent:
    version: str
    jsonrpc: int
    rest: int
    grpc: int


@dataclass
class Deployment:
    """One set of agents and one gateway that fronts every backend dialect as a tenant."""

    agents: dict[str, Agent]
    gateway_http: int
    logs: Path
    cache: dict[tuple[str, ...], Any] = field(default_factory=dict)
    gateway_grpc: int = 0
    # The session's webhook receiver (webhook_receiver.py): every POST, one JSON line.
    webhook_base: str = ""
    hooks: Path | None = None
    # The built-in demo agent serving v1.0 (`demo-agent --protocol 1.0`), a process of
    # its own: the gateway's tenant `demo10`, and a peer the SDK clients call directly.
    demo10: int = 0

    def url(self, tenant: str) -> str:
        return f"http://127.0.0.1:{self.gateway_http}/{tenant}"

    def grpc_target(self) -> str:
        """Both gRPC services, every tenant: v1.0 clients name it in the request's
        `tenant` field, v0.3 clients in `x-a2a-tenant` metadata."""
        return f"127.0.0.1:{self.gateway_grpc}"


def _start_agent(stack: ExitStack, version: str, logs: Path) -> Agent:
    agent = Agent(version, free_port(), free_port(), free_port())
    script = PEERS / ("agent_v03.py" if version == "0.3" else "agent_v10.py")
    cmd = [str(SDK_PYTHON[version]), str(script), "--jsonrpc-port", str(agent.jsonrpc),
           "--rest-port", str(agent.rest), "--grpc-port", str(agent.grpc)]
    log = logs / f"agent-{version}.log"
    stack.enter_context(running(cmd, agent.jsonrpc, log=log, timeout=90))
    return agent


def card_url(agent: Agent) -> str:
    return f"http://127.0.0.1:{agent.jsonrpc}/.well-known/agent-card.json"


# Tenants: one per backend dialect the gateway can reach.
def tenants_for(agents: dict[str, Agent]) -> dict[str, Any]:
    return {
        "a03": {"backend": {"url": f"http://127.0.0.1:{agents['0.3'].jsonrpc}/",
                            "version": "0.3", "binding": "JSONRPC"}},
        "a10": {"backend": {"url": f"http://127.0.0.1:{agents['1.0'].jsonrpc}/",
                            "version": "1.0", "binding": "JSONRPC"}},
        "r10": {"backend": {"url": f"http://127.0.0.1:{agents['1.0'].rest}",
                            "version": "1.0", "binding": "HTTP+JSON"}},
        "r03": {"backend": {"url": f"http://127.0.0.1:{agents['0.3'].rest}",
                            "version": "0.3", "binding": "HTTP+JSON"}},
        # Discovered from the agents' own cards (no url/version/binding configured).
        "d03": {"backend": {"card": card_url(agents["0.3"])}},
        "d10": {"backend": {"card": card_url(agents["1.0"])}},
        # A gRPC address has no card URL of its own: the agent's card is named, for the
        # interfaces it lists (per-operation fallback) and its capabilities (pre-checks).
        "g03": {"backend": {"url": f"127.0.0.1:{agents['0.3'].grpc}", "card": card_url(
            agents["0.3"]), "version": "0.3", "binding": "GRPC"}},
        "g10": {"backend": {"url": f"127.0.0.1:{agents['1.0'].grpc}", "card": card_url(
            agents["1.0"]), "version": "1.0", "binding": "GRPC"}},
    }


@contextmanager
def deployment_running(logs: Path) -> Iterator[Deployment]:
    """The SDK agents of both versions and one gateway fronting each backend dialect."""
    for version, python in SDK_PYTHON.items():
        if not python.exists():
            raise RuntimeError(f"missing SDK venv for {version}: run `make venvs`")
    with ExitStack() as stack:
        agents = {v: _start_agent(stack, v, logs) for v in ("0.3", "1.0")}
        port, demo_port, grpc_port = free_port(), free_port(), free_port()
        tenants = tenants_for(agents)
        tenants["demo"] = {"backend": {"url": f"http://127.0.0.1:{demo_port}/",
                                       "version": "0.3"}}
        demo10 = free_port()
        stack.enter_context(running(
            [sys.executable, "-m", "gateway.cli", "demo-agent", "--port", str(demo10),
             "--protocol", "1.0"], demo10, log=logs / "demo10.log"))
        tenants["demo10"] = {"backend": {"url": f"http://127.0.0.1:{demo10}/",
                                         "version": "1.0", "binding": "JSONRPC"}}
        config = write_config(logs / "gateway.yaml", {
            "listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
            "demo_agent": {"listen": f"127.0.0.1:{demo_port}"},
            "tenants": tenants,
            "default_tenant": "a03",
            # The webhook receivers are on 127.0.0.1, which the relay's SSRF guard refuses
            # unless allow-listed.
            "push_relay": {"webhook_allowlist": ["127.0.0.1"]},
            # Stream ids and resume (tests/interop/test_stream_resume.py); off by default.
            "state": {"journal": {"enabled": True}},
        })
        stack.enter_context(running(gateway_cmd(config), port, log=logs / "gateway.log"))
        hook_port = free_port()
        stack.enter_context(running(
            [sys.executable, str(PEERS / "webhook_receiver.py"), "--port", str(hook_port),
             "--out", str(logs / "hooks.jsonl")], hook_port, log=logs / "receiver.log"))
        yield Deployment(agents, port, logs, gateway_grpc=grpc_port,
                         webhook_base=f"http://127.0.0.1:{hook_port}", hooks=logs / "hooks.jsonl",
                         demo10=demo10)


def read_hooks(out: Path, path: str) -> list[dict[str, Any]]:
    """The webhook receiver's records for ``path``. The receiver may be writing its last
    line right now: only whole lines count."""
    if not out.exists():
        return []
    lines = out.read_text(encoding="utf-8").split("\n")[:-1]
    return [r for r in map(json.loads, lines) if r["path"] == path]


def run_client(version: str, url: str, transport: str, scenario: str = "all",
               webhook: str | None = None, timeout: float = 180,
               tenant: str | None = None, extra: list[str] | None = None) -> Any:
    script = PEERS / ("client_v03.py" if version == "0.3" else "client_v10.py")
    cmd = [str(SDK_PYTHON[version]), str(script), "--url", url, "--transport", transport,
           "--scenario", scenario, *(extra or [])]
    if webhook:
        cmd += ["--webhook", webhook]
    if tenant:
        cmd += ["--tenant", tenant]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise AssertionError(f"client failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def webhook_path(version: str, tenant: str, transport: str) -> str:
    """The receiver path one (client, binding, tenant) run registers its push configs at."""
    return f"/hook/{version}-{transport}-{tenant}"


def push_config_shown(webhook: str, client: str, tenant: str, *,
                      created: bool = False) -> dict[str, Any]:
    """The push config (as the peers report it, without taskId) a client is shown:
    relayed (client and agent versions differ), its own; not relayed, the gateway cannot
    vouch for who set the agent's copy, so get and list show no credentials, while a
    create answers what it sent (docs/push-relay.md, "Credentials in answers")."""
    cfg: dict[str, Any] = {"id": "cfg1", "url": webhook, "token": "tok-1",
                           "scheme": "Bearer", "credentials": "sekret"}
    agent = "0.3" if tenant == "demo" or tenant.endswith("03") else "1.0"
    return cfg if created or agent != client else {**cfg, "token": None,
                                                   "credentials": None}


def webhook_for(deployment: Deployment, version: str, tenant: str,
                transport: str = "JSONRPC") -> str:
    return deployment.webhook_base + webhook_path(version, tenant, transport)


def _log_size(deployment: Deployment) -> int:
    log = deployment.logs / "gateway.log"
    return log.stat().st_size if log.exists() else 0


def _settled_log_size(deployment: Deployment, quiet: float = 0.1, limit: float = 1.0) -> int:
    """The gateway log's size once it has stopped growing for ``quiet`` seconds: a stream's
    call line is written when the gateway has finished it, maybe after the client left."""
    size, deadline = _log_size(deployment), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _log_size(deployment)
        if now == size:
            break
        size = now
    return size


def call_lines(deployment: Deployment, start: int, end: int, version: str,
               transport: str) -> list[dict[str, Any]]:
    """The gateway's per-call log records between two offsets, of one client dialect."""
    with open(deployment.logs / "gateway.log", "rb") as log:
        log.seek(start)
        chunk = log.read(end - start).decode("utf-8", "replace")
    records = []
    for line in chunk.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == "call" and \
                record.get("client_version") == version and \
                record.get("client_binding") == transport:
            records.append(record)
    return records


def client_results(deployment: Deployment, version: str, tenant: str,
                   transport: str = "JSONRPC") -> dict[str, Any]:
    """Every scenario of one client against one tenant, run once per session. Push
    configs point at the session's webhook receiver (webhook_for); the gateway's log
    lines for the run are kept under ("calls", version, tenant, transport)."""
    key = (version, tenant, transport)
    if key not in deployment.cache:
        webhook = webhook_for(deployment, version, tenant, transport)
        # The lines of calls made before (a probe of the last pair) are written within the
        # gateway's log flush bound: they land before this run's first line.
        start = _settled_log_size(deployment)
        if transport == "GRPC":
            results = run_client(version, deployment.grpc_target(), transport,
                                 webhook=webhook, tenant=tenant)
        else:
            results = run_client(version, deployment.url(tenant), transport, webhook=webhook)
        end = _settled_log_size(deployment)
        deployment.cache[("calls", *key)] = call_lines(deployment, start, end, version,
                                                       transport)
        deployment.cache[key] = results
    return deployment.cache[key]  # type: ignore[no-any-return]
