"""What the deploy tests share: paths, the strict YAML loader, and the tools virtualenv
(.venvs/tools, made by `make deploy-tools`) driven through tools_driver.py."""

from __future__ import annotations

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
