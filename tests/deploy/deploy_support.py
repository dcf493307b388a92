"""What the deploy tests share: paths, the strict YAML loader, and the tools virtualenv
(.venvs/tools, made by `make deploy-tools`) driven through tools_driver.py."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
CHART = DEPLOY / "helm" / "a2a-gateway"
TOOLS = Path(os.environ.get("A2A_DEPLOY_TOOLS", ROOT / ".venvs" / "tools"))
DRIVER = Path(__file__).with_name("tools_driver.py")

# The Kubernetes versions whose schemas every manifest must pass (kubernetes-validate bundles them).
K8S_VERSIONS = ("1.30.0", "1.37.0")
CONFIG_PATH = "/etc/a2a-gateway/gateway.yaml"
HTTP_PORT, GRPC_PORT = 8080, 50051
RELAY_ENV = "A2A_GATEWAY_RELAY_KEYS"
INSTALL_HINT = "run `make deploy-tools` (installs tests/deploy/requirements-tools.txt into .venvs/tools)"


# --- YAML without silent surprises ------------------------------------------------------------

class _StrictLoader(yaml.SafeLoader):
    """safe_load that rejects duplicate keys (PyYAML and kubectl keep the last one silently)."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                    key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_docs(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]


def load_file(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)


# --- the tools virtualenv ---------------------------------------------------------------------

def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this does not skip)")
    pytest.skip(reason)


def run_tool(action: str, **request: Any) -> Any:
    python = TOOLS / "bin" / "python"
    if not python.exists():
        pytest.fail(f"the deploy tools are not installed at {TOOLS}: {INSTALL_HINT}")
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps({"action": action, **request}),
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    if proc.returncode != 0:
        pytest.fail(f"tools_driver.py {action} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def k8s_schema_errors(docs: list[dict[str, Any]]) -> list[str]:
    answer = run_tool("k8s-validate", resources=docs, versions=list(K8S_VERSIONS))
    assert len(answer["results"]) == len(docs) * len(K8S_VERSIONS)
    return [f"{r['resource']} (Kubernetes {r['version']}): {r['error']}"
            for r in answer["results"] if r["error"]]


def secret_text(secret: dict[str, Any], key: str) -> str:
    """The value of ``key`` in a Secret manifest, as the container's environment gets it."""
    if key in secret.get("stringData", {}):
        return str(secret["stringData"][key])
    return base64.b64decode(secret["data"][key], validate=True).decode()


# --- reading manifests ------------------------------------------------------------------------

def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def gateway_deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Deployment running the gateway (beside it there may be a Redis)."""
    found = [d for d in by_kind(docs, "Deployment")
             if any(c["name"] == "a2a-gateway" for c in d["spec"]["template"]["spec"]["containers"])]
    assert len(found) == 1, f"expected one gateway Deployment, found {len(found)}"
    return found[0]


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in by_kind(docs, kind) if d["metadata"]["name"] == name]
    assert found, f"no {kind} named {name!r} among the manifests"
    return found[0]


def resolve_port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    assert port in ports, f"port name {port!r} is not a port of container {container['name']}"
    return int(ports[port])


def mounted_config(docs: list[dict[str, Any]], pod: dict[str, Any],
                   container: dict[str, Any]) -> str:
    """The text the container sees at CONFIG_PATH, followed through mount, volume and ConfigMap."""
    for mount in container.get("volumeMounts", []):
        path, sub = mount["mountPath"].rstrip("/"), mount.get("subPath")
        if sub and path == CONFIG_PATH:
            file_in_volume = sub
        elif not sub and CONFIG_PATH.startswith(path + "/"):
            file_in_volume = CONFIG_PATH[len(path) + 1:]
        else:
            continue
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert "configMap" in volume, f"{CONFIG_PATH} should come from a ConfigMap"
        items = {i["path"]: i["key"] for i in volume["configMap"].get("items", [])}
        key = items.get(file_in_volume, file_in_volume) if items else file_in_volume
        configmap = named(docs, "ConfigMap", volume["configMap"]["name"])
        assert key in configmap["data"], f"ConfigMap {configmap['metadata']['name']} has no {key!r}"
        return str(configmap["data"][key])
    raise AssertionError(f"container {container['name']} mounts nothing at {CONFIG_PATH}")


def helm_render(values: dict[str, Any] | None, chart: Path = CHART) -> dict[str, Any]:
    return dict(run_tool("helm-render", chart=str(chart), values=values, name="agent",
                         namespace="agents"))


def rendered_docs(manifests: dict[str, str]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if path.endswith(".yaml"):
            docs.extend(load_docs(text))
    return docs


# --- the Dockerfile ---------------------------------------------------------------------------

def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        instruction, _, args = (pending + line).partition(" ")
        out.append((instruction.upper(), args.strip()))
        pending = ""
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (ins, _) in enumerate(instructions) if ins == "FROM"]
    return instructions[starts[-1]:]
