"""Every deploy recipe started as far as this machine allows (no cluster, no Docker in
`make test`): the gateway config the recipe puts in the container, with the environment
the recipe gives it, run by `a2a-gateway serve` here until /readyz says ready.

What a container has and this machine does not is stood in for, and only that:
- addresses: each listener `0.0.0.0:P` becomes a free loopback port, each backend the
  built-in demo agent on loopback, a Redis URL a real redis-server on loopback;
- mounts: /etc/a2a-gateway and /var/lib/a2a-gateway become folders of the test's own;
  the files Secrets would mount there are made (a dev certificate, API keys);
- Secrets made out of band are made by the very commands the recipe documents
  (`a2a-gateway keygen ...`, read from the recipe's own comments).
The Helm chart's own relay-key Secret is checked here too: a valid key, made once per
install and kept across upgrades.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import pytest
import yaml

from gateway.config.models import PushRelayConfig
from gateway.relay.seals import load_keys
from tests.deploy.deploy_support import (
    CHART,
    CONFIG_PATH,
    DEPLOY,
    MANIFESTS,
    RELAY_ENV,
    dockerfile_instructions,
    final_stage,
    gateway_deployment,
    helm_render,
    load_docs,
    load_file,
    mounted_config,
    named,
    rendered_docs,
    resolve_port,
    secret_text,
)
from tests.support.helpers import ROOT, VENV_BIN, free_port, redis_server, stop_process

CLI = str(VENV_BIN / "a2a-gateway")
MOUNTED = ("/etc/a2a-gateway/", "/var/lib/a2a-gateway/")
READY_WITHIN = 90.0  # seconds; a cold start of two workers on a loaded 2-core machine


@dataclass
class Recipe:
    config: dict[str, Any]  # what the container reads at CONFIG_PATH
    env: dict[str, str]  # what the container's environment holds
    probe_port: int  # the container port of its readiness probe
    args: list[str]  # the container's arguments to a2a-gateway (its ENTRYPOINT)
    relay_from_env: bool = True  # the recipe gives the relay key (else: made per process)
    notes: list[str] = field(default_factory=list)


def documented(path: Path, pattern: str) -> list[re.Match[str]]:
    """The recipe's own instructions (its comments) matching ``pattern``."""
    return list(re.finditer(pattern, path.read_text(encoding="utf-8"), re.M))


def run_documented(command: str) -> str:
    """A documented `$(a2a-gateway keygen ...[ | head -1])`, run as written (on our CLI)."""
    argv = shlex.split(command.split("|")[0])
    assert argv[:2] == ["a2a-gateway", "keygen"], command
    out = subprocess.run([CLI, *argv[1:]], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return out.splitlines()[0] if "head -1" in command else out.strip()


def container_env(docs: list[dict[str, Any]], container: dict[str, Any],
                  made: dict[tuple[str, str], str]) -> dict[str, str]:
    """The container's environment: values, and Secret keys from the rendered Secrets or
    from those the recipe's documented commands made (``made``: (name, key) -> text)."""
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = str(entry["value"])
            continue
        ref = entry["valueFrom"]["secretKeyRef"]
        if (ref["name"], ref["key"]) in made:
            env[entry["name"]] = made[ref["name"], ref["key"]]
        else:
            env[entry["name"]] = secret_text(named(docs, "Secret", ref["name"]), ref["key"])
    return env


def from_workload(docs: list[dict[str, Any]],
                  made: dict[tuple[str, str], str] | None = None) -> Recipe:
    pod = gateway_deployment(docs)["spec"]["template"]["spec"]
    gateway = next(c for c in pod["containers"] if c["name"] == "a2a-gateway")
    assert gateway["args"][:3] == ["serve", "--config", CONFIG_PATH]
    probe = gateway["readinessProbe"]["httpGet"]
    assert probe["path"] == "/readyz"
    return Recipe(yaml.safe_load(mounted_config(docs, pod, gateway)),
                  container_env(docs, gateway, made or {}), resolve_port(gateway, probe["port"]),
                  gateway["args"])


def kubernetes(name: str) -> Recipe:
    path = MANIFESTS / name
    # `kubectl create secret generic -n <ns> NAME --from-literal=KEY="$(a2a-gateway ...)"`
    steps = documented(path, r'create secret generic -n <namespace> (\S+) \\\n#\s+'
                             r'--from-literal=([\w-]+)="\$\((a2a-gateway keygen [^)]+)\)"')
    assert steps, f"{name} documents no command making its Secret"
    made = {(m[1], m[2]): run_documented(m[3]) for m in steps}
    return from_workload(load_docs(path.read_text(encoding="utf-8")), made)


def helm(values: dict[str, Any] | None) -> Recipe:
    answer = helm_render(values)
    assert "error" not in answer, answer.get("error")
    return from_workload(rendered_docs(answer["manifests"]))


def compose() -> Recipe:
    path = DEPLOY / "compose.yaml"
    made = {m[1]: run_documented(m[2]) for m in documented(
        path, r"^#\s+export (\w+)=\$\((a2a-gateway keygen [^)]+)\)")}
    service = load_file(path)["services"]["gateway"]
    env = {}
    for name, value in service["environment"].items():
        ref = re.fullmatch(r"\$\{(\w+)(?::[?-][^}]*)?\}", str(value))
        env[name] = made[ref[1]] if ref else str(value)  # a required one must be documented
    (source,) = [v.split(":")[0] for v in service["volumes"] if f":{CONFIG_PATH}" in v]
    health = service["healthcheck"]["test"][-1]
    admin = int(re.search(r"127\.0\.0\.1:(\d+)/healthz", health)[1])  # type: ignore[index]
    return Recipe(load_file((DEPLOY / source).resolve()), env, admin, service["command"])


def docker_default() -> Recipe:
    """`docker run IMAGE` as built: config/docker.yaml, the image's ENV and CMD."""
    config = load_file(ROOT / "config" / "docker.yaml")
    final = final_stage(dockerfile_instructions((ROOT / "Dockerfile").read_text()))
    env = dict(a.split("=", 1) for i, a in final if i == "ENV")
    cmd = [json.loads(a) for i, a in final if i == "CMD"][-1]
    return Recipe(config, env, int(config["listen"]["http"].rpartition(":")[2]), cmd,
                  relay_from_env=False)


def recipe(name: str) -> Recipe:
    shared = load_file(CHART / "ci" / "shared-values.yaml")
    return {"kubernetes-sidecar": lambda: kubernetes("sidecar.yaml"),
            "kubernetes-shared": lambda: kubernetes("shared-gateway.yaml"),
            "helm-sidecar": lambda: helm(None), "helm-shared": lambda: helm(shared),
            "compose": compose, "docker": docker_default}[name]()


# --- the stand-ins --------------------------------------------------------------------------

def localize(value: Any, root: Path) -> Any:
    """The config with the container's mounted folders moved under ``root``."""
    if isinstance(value, dict):
        return {k: localize(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [localize(v, root) for v in value]
    if isinstance(value, str) and value.startswith(MOUNTED):
        return f"{root}{value}"
    return value


def stand_in(config: dict[str, Any], root: Path, backend: str,
             redis: str | None) -> dict[int, int]:
    """Point the config's addresses at loopback stand-ins; make the files Secrets would
    mount. Answers container port -> local port."""
    ports: dict[int, int] = {}
    for name, address in config["listen"].items():
        host, _, port = address.rpartition(":")
        assert host == "0.0.0.0", f"listen.{name}: a container listens on all interfaces"
        ports[int(port)] = free_port()
        config["listen"][name] = f"127.0.0.1:{ports[int(port)]}"
    for tenant in config["tenants"].values():
        url = urlsplit(tenant["backend"]["url"])
        tenant["backend"]["url"] = urlunsplit(url._replace(netloc=urlsplit(backend).netloc))
    if redis is not None:
        config["state"]["url"] = redis
    (root / "var/lib/a2a-gateway").mkdir(parents=True, exist_ok=True)
    tls = config.get("auth", {}).get("server_tls")
    if tls:
        folder = Path(tls["cert_file"]).parent
        subprocess.run([CLI, "dev-cert", "--dir", str(folder)], check=True, timeout=60,
                       capture_output=True)
    for key in config.get("auth", {}).get("api_keys", {}).get("keys", []):
        if key.get("key_file"):
            Path(key["key_file"]).parent.mkdir(parents=True, exist_ok=True)
            Path(key["key_file"]).write_text(run_documented("a2a-gateway keygen api-key "
                                                            "| head -1"))
    return ports


async def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + READY_WITHIN
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"serve exited with {proc.returncode}:\n" \
                                        f"{log.read_text(errors='replace')[-3000:]}"
            try:
                async with http.get(url, timeout=aiohttp.ClientTimeout(total=5)) as answer:
                    if answer.status == 200:
                        return dict(await answer.json())
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.2)
    raise AssertionError(f"{url} not ready in {READY_WITHIN}s:\n{log.read_text()[-3000:]}")


RECIPES = ["kubernetes-sidecar", "kubernetes-shared", "helm-sidecar", "helm-shared", "compose",
           "docker"]


@pytest.mark.parametrize("name", RECIPES)
async def test_recipe_starts_and_gets_ready(name: str, tmp_path: Path, demo_agent: str,
                                            request: pytest.FixtureRequest) -> None:
    if name.startswith("helm"):
        request.getfixturevalue("helm")  # skips (outside CI) without Helm's SDK
    made = recipe(name)
    made.config, made.args, made.env = (localize(x, tmp_path)
                                        for x in (made.config, made.args, made.env))
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server()) \
            if made.config.get("state", {}).get("backend") == "redis" else None
        ports = stand_in(made.config, tmp_path, demo_agent, redis)
        config = tmp_path / "etc/a2a-gateway/gateway.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump(made.config))
        # The container's environment only, as the recipe sets it (and a PATH).
        env = {"PATH": os.environ["PATH"], **made.env}
        log = tmp_path / "serve.log"
        with open(log, "wb") as out:
            assert made.args[0] == "serve" and str(config) in {*made.args, *made.env.values()}
            proc = subprocess.Popen([CLI, *made.args], stdout=out,
                                    stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
        try:
            report = await wait_ready(f"http://127.0.0.1:{ports[made.probe_port]}/readyz",
                                      proc, log)
        finally:
            stop_process(proc)
    assert report["status"] == "ready"
    assert all(t["ready"] for t in report["tenants"].values()), report
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    sources = {x.get("key_source") for x in lines if x.get("event") == "push relay ready"}
    expected = f"env {RELAY_ENV}" if made.relay_from_env else "generated"
    assert sources == {expected}, sources


# --- the chart's relay key ------------------------------------------------------------------

def _chart_key(values: dict[str, Any] | None, chart: Path = CHART) -> str:
    docs = rendered_docs(helm_render(values, chart)["manifests"])
    return secret_text(named(docs, "Secret", "agent-a2a-gateway-relay"), "relay-keys")


def test_helm_makes_a_valid_relay_key_per_install(helm: str) -> None:
    first, second = _chart_key(None), _chart_key(None)
    assert first != second, "a fresh install gets a fresh key"
    for text in (first, second):
        (key,), source = load_keys(PushRelayConfig(), {RELAY_ENV: text})
        assert len(key) == 32 and source == f"env {RELAY_ENV}"


def test_helm_keeps_the_relay_key_across_upgrades(helm: str, tmp_path: Path) -> None:
    """`lookup` finds nothing offline, so the chart's key choice is run here on a copy of
    the chart whose extra template hands the same helper an existing Secret, as `lookup`
    does in a cluster on `helm upgrade`."""
    chart = tmp_path / "a2a-gateway"
    shutil.copytree(CHART, chart)
    existing = "c29tZS1rZXB0LWtleQ=="
    (chart / "templates" / "upgrade-probe.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: upgrade-probe}\ndata:\n"
        "  kept: {{ include \"a2a-gateway.relayKeyData\" (dict \"root\" . \"existing\" "
        f"(dict \"data\" (dict \"relay-keys\" \"{existing}\"))) | quote }}}}\n"
        "  fresh: {{ include \"a2a-gateway.relayKeyData\" (dict \"root\" . \"existing\" "
        "dict) | quote }}\n")
    docs = rendered_docs(helm_render(None, chart)["manifests"])
    probe = named(docs, "ConfigMap", "upgrade-probe")["data"]
    assert probe["kept"] == existing
    assert len(load_keys(PushRelayConfig(), {RELAY_ENV: secret_text(
        {"data": {"k": probe["fresh"]}}, "k")})[0][0]) == 32
    # relayKey.value, when given, wins over the kept one.
    given = run_documented("a2a-gateway keygen relay")
    docs = rendered_docs(helm_render({"relayKey": {"value": given}}, chart)["manifests"])
    assert secret_text(named(docs, "Secret", "agent-a2a-gateway-relay"), "relay-keys") == given
