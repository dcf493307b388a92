"""The deploy artifacts, validated offline: Kubernetes manifests, the Helm chart, the Dockerfile,
the compose file and every gateway config they carry.

The validators live in their own virtualenv, .venvs/tools, made by `make deploy-tools` from
tests/deploy/requirements-tools.txt (`make test` depends on it); tools_driver.py runs there:
  - kubernetes-validate: the Kubernetes JSON schemas (strict: unknown fields are errors), offline;
  - helm-python-sdk: Helm v4's Go SDK (template engine and linter), standing in for the helm CLI;
  - hadolint: the Dockerfile linter;
  - check-jsonschema: its vendored compose-spec schema.
The Kubernetes and compose schema checks always run: without the tools they fail, naming the
make target. Only the Helm and hadolint steps skip when their tool is missing (outside CI:
with CI set they fail too); the chart's structure, the Dockerfile's essentials and every embedded
gateway config are checked here in any case.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from gateway.config import GatewayConfig, parse_config

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


@pytest.fixture(scope="session")
def found() -> dict[str, Any]:
    """What the tools virtualenv holds; empty when there is none."""
    return dict(run_tool("probe")) if (TOOLS / "bin" / "python").exists() else {}


@pytest.fixture(scope="session")
def tools(found: dict[str, Any]) -> dict[str, Any]:
    """The schema validators: required, never skipped."""
    if not found.get("kubernetes_validate") or not (TOOLS / "bin" / "check-jsonschema").exists():
        pytest.fail(f"kubernetes-validate / check-jsonschema missing from {TOOLS}: {INSTALL_HINT}")
    return found


@pytest.fixture(scope="session")
def helm(found: dict[str, Any]) -> str:
    if not found.get("helm_python"):
        _skip_or_fail(f"helm step only: helm-python-sdk (Helm's Go SDK) is not usable in {TOOLS} "
                      f"({found.get('helm_error', 'no tools virtualenv')}); {INSTALL_HINT}")
    return str(found["helm_sdk"])


def k8s_schema_errors(docs: list[dict[str, Any]]) -> list[str]:
    answer = run_tool("k8s-validate", resources=docs, versions=list(K8S_VERSIONS))
    assert len(answer["results"]) == len(docs) * len(K8S_VERSIONS)
    return [f"{r['resource']} (Kubernetes {r['version']}): {r['error']}"
            for r in answer["results"] if r["error"]]


# --- what every gateway workload must look like -----------------------------------------------

def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
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


def assert_non_root(pod_sc: dict[str, Any], sc: dict[str, Any], who: str) -> None:
    effective = {**pod_sc, **sc}
    assert effective.get("runAsNonRoot") is True, f"{who}: runAsNonRoot must be true"
    assert effective.get("runAsUser", 1) != 0, f"{who}: runAsUser 0"
    assert sc.get("allowPrivilegeEscalation") is False, f"{who}: allowPrivilegeEscalation"
    assert "ALL" in sc.get("capabilities", {}).get("drop", []), f"{who}: capabilities not dropped"
    assert not sc.get("privileged"), f"{who}: privileged"


def check_workload(docs: list[dict[str, Any]], mode: str, relay: str | None) -> GatewayConfig:
    """mode: sidecar | shared; relay: None, "rendered" (Secret among docs) or "external"."""
    deployment = one(docs, "Deployment")
    template = deployment["spec"]["template"]
    pod = template["spec"]
    labels = template["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items(), "the Deployment's selector misses its own pods"
    containers = {c["name"]: c for c in pod["containers"]}
    gateway = containers["a2a-gateway"]

    # Listeners: the ports, the config's listen, the probes and the Service agree.
    assert {p["name"]: p["containerPort"] for p in gateway["ports"]} == {
        "http": HTTP_PORT, "grpc": GRPC_PORT}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = gateway[probe]["httpGet"]
        assert get["path"] == path, f"{probe} should GET {path}"
        assert resolve_port(gateway, get["port"]) == HTTP_PORT, f"{probe} port"
        assert get.get("scheme", "HTTP") == "HTTP"

    assert "command" not in gateway, "keep the image's ENTRYPOINT (a2a-gateway)"
    args = gateway.get("args", [])
    assert args[:1] == ["serve"] and args[1:3] == ["--config", CONFIG_PATH], args
    config = parse_config(yaml.safe_load(mounted_config(docs, pod, gateway)),
                          f"the {mode} ConfigMap")
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    assert config.listen.grpc == f"0.0.0.0:{GRPC_PORT}"
    assert config.demo_agent is None, "no in-process demo agent in a cluster"

    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    pod_sc = pod.get("securityContext", {})
    assert_non_root(pod_sc, gateway.get("securityContext", {}), "a2a-gateway")
    assert gateway["securityContext"].get("readOnlyRootFilesystem") is True
    resources = gateway["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"]
    assert resources["limits"]["memory"]

    env = {e["name"]: e for e in gateway.get("env", [])}
    if relay is None:
        assert RELAY_ENV not in env
        assert not by_kind(docs, "Secret")
    else:
        ref = env[RELAY_ENV]["valueFrom"]["secretKeyRef"]
        assert not ref.get("optional"), "the relay key is required once configured"
        if relay == "rendered":
            secret = named(docs, "Secret", ref["name"])
            assert ref["key"] in {**secret.get("data", {}), **secret.get("stringData", {})}
        else:
            assert not by_kind(docs, "Secret"), "an existing Secret is referenced, not rendered"

    service = one(docs, "Service")
    assert service["spec"]["selector"].items() <= labels.items(), "the Service selects no pod"
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert set(service_ports) == {"http", "grpc"}
    for name, number in (("http", HTTP_PORT), ("grpc", GRPC_PORT)):
        port = service_ports[name]
        assert port["port"] == number
        assert resolve_port(gateway, port.get("targetPort", number)) == number

    if mode == "sidecar":
        assert len(containers) == 2, "the gateway and the legacy agent, one pod"
        (agent,) = (c for n, c in containers.items() if n != "a2a-gateway")
        assert agent["image"] == "example.com/legacy-agent:0.3"
        # Containers of one pod share its network namespace: 127.0.0.1 is the agent.
        assert "ports" not in agent, "the agent listens on loopback only: no containerPort"
        assert_non_root(pod_sc, agent.get("securityContext", {}), agent["name"])
        assert deployment["spec"].get("replicas", 1) >= 1
        assert list(config.tenants) == [config.default_tenant]
        backend = config.tenants[config.default_tenant].backend
        assert (backend.url, backend.version, backend.binding) == (
            "http://127.0.0.1:9000/", "0.3", "JSONRPC")
    else:
        assert list(containers) == ["a2a-gateway"]
        assert deployment["spec"]["replicas"] == 2
        kinds = {(t.backend.version, t.backend.binding) for t in config.tenants.values()}
        assert {("0.3", "JSONRPC"), ("1.0", "HTTP+JSON")} <= kinds
        for tenant in config.tenants.values():
            host = urlsplit(tenant.backend.url).hostname
            assert host not in {"127.0.0.1", "localhost", "::1"}, "a shared gateway's backends are remote"
    return config


# --- deploy/kubernetes ------------------------------------------------------------------------

PLAIN = {
    "sidecar.yaml": ("sidecar", "rendered", {"ConfigMap", "Secret", "Deployment", "Service"}),
    "shared-gateway.yaml": ("shared", None, {"ConfigMap", "Deployment", "Service"}),
}


def test_every_manifest_is_covered() -> None:
    assert sorted(p.name for p in MANIFESTS.glob("*.y*ml")) == sorted(PLAIN)


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_manifest_matches_kubernetes_schemas(name: str, tools: dict[str, Any]) -> None:
    docs = load_docs((MANIFESTS / name).read_text(encoding="utf-8"))
    assert {d["kind"] for d in docs} == PLAIN[name][2]
    assert all(d["metadata"].get("name") for d in docs)
    assert all("namespace" not in d["metadata"] for d in docs), "leave the namespace to kubectl -n"
    assert k8s_schema_errors(docs) == []


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_manifest_workload(name: str) -> None:
    mode, relay, _ = PLAIN[name]
    check_workload(load_docs((MANIFESTS / name).read_text(encoding="utf-8")), mode, relay)


def test_every_configmap_holds_a_valid_gateway_config() -> None:
    seen = 0
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for cm in by_kind(load_docs(path.read_text(encoding="utf-8")), "ConfigMap"):
            assert set(cm["data"]) == {"gateway.yaml"}, f"{path.name}: {sorted(cm['data'])}"
            parse_config(load_docs(cm["data"]["gateway.yaml"])[0], f"{path.name} ConfigMap")
            seen += 1
    assert seen == len(PLAIN)


def test_the_schema_check_catches_a_bad_manifest(tools: dict[str, Any]) -> None:
    docs = load_docs((MANIFESTS / "sidecar.yaml").read_text(encoding="utf-8"))
    deployment = one(docs, "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][1]["livenesProbe"] = {}
    errors = k8s_schema_errors([deployment, {"apiVersion": "v1", "kind": "Nonsense",
                                             "metadata": {"name": "x"}}])
    assert any("livenesProbe" in e for e in errors), errors
    assert any("Nonsense" in e for e in errors), errors


# --- deploy/helm/a2a-gateway ------------------------------------------------------------------

def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(
            out.get(key), dict) else value
    return out


SHARED_VALUES = load_file(CHART / "ci" / "shared-values.yaml")
HELM_CASES: dict[str, tuple[dict[str, Any] | None, str, str | None]] = {
    "sidecar-defaults": (None, "sidecar", None),
    "sidecar-relay-key": ({"relayKey": {"value": "test-relay-key"}}, "sidecar", "rendered"),
    "shared-ci-values": (SHARED_VALUES, "shared", None),
    "shared-existing-secret": (merge(SHARED_VALUES, {"relayKey": {"existingSecret": "relay"}}),
                               "shared", "external"),
}


def helm_render(values: dict[str, Any] | None) -> dict[str, Any]:
    return dict(run_tool("helm-render", chart=str(CHART), values=values, name="agent",
                         namespace="agents"))


def rendered_docs(manifests: dict[str, str]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if path.endswith(".yaml"):
            docs.extend(load_docs(text))
    return docs


def test_chart_layout() -> None:
    chart = load_file(CHART / "Chart.yaml")
    assert chart["apiVersion"] == "v2" and chart["name"] == "a2a-gateway"
    for name in ("_helpers.tpl", "deployment.yaml", "service.yaml", "configmap.yaml",
                 "secret.yaml"):
        assert (CHART / "templates" / name).is_file(), name
    values = load_file(CHART / "values.yaml")
    assert values["mode"] == "sidecar"
    assert values["legacyAgent"]["image"] == "example.com/legacy-agent:0.3"
    assert values["probes"]["liveness"]["httpGet"]["path"] == "/healthz"
    assert values["probes"]["readiness"]["httpGet"]["path"] == "/readyz"
    assert "listen" not in values["gateway"]["config"], "the chart writes listen from gateway.ports"
    # The config maps as given must already be keys the gateway accepts (tenants come later).
    for config in (values["gateway"]["config"], SHARED_VALUES["gateway"]["config"]):
        parse_config({"tenants": {"t": {"backend": {"url": "http://t/", "version": "0.3"}}},
                      **config}, "values gateway.config")


@pytest.mark.parametrize("case", sorted(HELM_CASES))
def test_helm_template(case: str, helm: str, tools: dict[str, Any]) -> None:
    values, mode, relay = HELM_CASES[case]
    answer = helm_render(values)
    assert "error" not in answer, answer.get("error")
    docs = rendered_docs(answer["manifests"])
    assert {d["kind"] for d in docs} == {"ConfigMap", "Deployment", "Service"} | (
        {"Secret"} if relay == "rendered" else set())
    assert k8s_schema_errors(docs) == []
    check_workload(docs, mode, relay)
    annotations = one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/config"])


@pytest.mark.parametrize("values", [None, SHARED_VALUES], ids=["sidecar", "shared"])
def test_helm_lint(values: dict[str, Any] | None, helm: str) -> None:
    report = run_tool("helm-lint", chart=str(CHART), values=values, namespace="agents",
                      kube_version=f"v{K8S_VERSIONS[0]}")
    assert report["errors"] == []
    assert report["total_charts_linted"] == 1
    # severity 1 is INFO ("icon is recommended"); warnings and errors fail.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize(("values", "needle"), [
    ({"mode": "sidcar"}, 'mode must be sidecar or shared, got "sidcar"'),
    ({"mode": "shared"}, "mode shared needs gateway.config.tenants"),
    ({"gateway": {"config": {"listen": {"http": "0.0.0.0:1"}}}}, "set gateway.ports instead"),
], ids=["bad-mode", "shared-without-tenants", "listen-in-config"])
def test_helm_rejects_values_that_cannot_work(values: dict[str, Any], needle: str,
                                              helm: str) -> None:
    answer = helm_render(values)
    assert needle in answer.get("error", ""), answer


def test_helm_sidecar_matches_the_plain_manifest(helm: str) -> None:
    """The chart's sidecar defaults and deploy/kubernetes/sidecar.yaml serve the same agent."""
    chart = rendered_docs(helm_render({"relayKey": {"value": "k"}})["manifests"])
    plain = load_docs((MANIFESTS / "sidecar.yaml").read_text(encoding="utf-8"))
    for docs in (chart, plain):
        pod = one(docs, "Deployment")["spec"]["template"]["spec"]
        assert sorted(c["name"] for c in pod["containers"]) == ["a2a-gateway", "legacy-agent"]

    def backend(docs: list[dict[str, Any]]) -> Any:
        config = check_workload(docs, "sidecar", "rendered")
        return config.tenants[config.default_tenant].backend

    assert backend(chart) == backend(plain)


# --- Dockerfile, config/docker.yaml -----------------------------------------------------------

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


def test_dockerfile_essentials() -> None:
    instructions = dockerfile_instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    froms = [args for ins, args in instructions if ins == "FROM"]
    assert len(froms) >= 2, "multi-stage: build the wheel apart from the runtime"
    assert all(re.match(r"python:3\.11-slim\b", f) for f in froms), froms
    assert re.search(r"\bAS build$", froms[0], re.IGNORECASE)
    final = final_stage(instructions)
    args_of = {ins: [a for i, a in final if i == ins] for ins, _ in final}

    assert any(a.startswith("--from=build ") for a in args_of["COPY"])
    assert f"config/docker.yaml {CONFIG_PATH}" in args_of["COPY"]
    for ins, args in instructions:
        if ins == "COPY" and not args.startswith("--from="):
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY source {source} is missing"

    users = args_of["USER"]
    assert users and users[-1].isdigit() and int(users[-1]) > 0, "numeric non-root USER"
    assert users[-1] == "10001", "the uid the Kubernetes manifests run as"
    last_user = max(i for i, (ins, _) in enumerate(final) if ins == "USER")
    assert all(ins != "RUN" for ins, _ in final[last_user:]), "nothing runs as root after USER"

    (healthcheck,) = args_of["HEALTHCHECK"]
    assert f"127.0.0.1:{HTTP_PORT}/healthz" in healthcheck
    assert set(args_of["EXPOSE"][-1].split()) >= {str(HTTP_PORT), str(GRPC_PORT)}
    assert json.loads(args_of["ENTRYPOINT"][-1]) == ["a2a-gateway"]
    assert json.loads(args_of["CMD"][-1]) == ["serve", "--config", CONFIG_PATH]

    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".venv", ".venvs", ".git"} <= set(ignored), "keep the virtualenvs out of the context"


def test_hadolint(found: dict[str, Any]) -> None:
    if not found.get("hadolint"):
        _skip_or_fail(f"hadolint is not installed in {TOOLS} (test_dockerfile_essentials still "
                      f"ran); {INSTALL_HINT}")
    proc = subprocess.run([found["hadolint"], "--no-color", "--failure-threshold", "style",
                           "Dockerfile"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def check_config_cli(path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "check-config", str(path)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout


def test_docker_config() -> None:
    path = ROOT / "config" / "docker.yaml"
    check_config_cli(path)
    config = parse_config(load_file(path), str(path))
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    assert config.demo_agent is None, "the image runs no in-process demo agent"


# --- deploy/compose.yaml ----------------------------------------------------------------------

def test_compose_file() -> None:
    compose = load_file(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert set(services) == {"demo-agent", "gateway"}
    for name, service in services.items():
        build = service["build"]
        context = (DEPLOY / build["context"]).resolve()
        assert context == ROOT, f"{name}: build context {context}"
        assert (context / build.get("dockerfile", "Dockerfile")) == ROOT / "Dockerfile"

    demo = services["demo-agent"]
    assert demo["command"] == ["demo-agent", "--host", "0.0.0.0", "--port", "9009"]
    healthcheck = demo["healthcheck"]["test"]
    assert healthcheck[0] == "CMD" and "127.0.0.1:9009/.well-known/agent-card.json" in healthcheck[-1]

    gateway = services["gateway"]
    assert gateway["command"] == ["serve", "--config", CONFIG_PATH]
    mounts = [v.split(":") for v in gateway["volumes"]]
    (source,) = [m[0] for m in mounts if m[1] == CONFIG_PATH]
    config_path = (DEPLOY / source).resolve()
    assert config_path == DEPLOY / "compose-gateway.yaml"
    assert gateway["depends_on"]["demo-agent"]["condition"] == "service_healthy"
    published = {p.rsplit(":", 1)[-1] for p in gateway["ports"]}
    assert published == {str(HTTP_PORT), str(GRPC_PORT)}

    check_config_cli(config_path)
    config = parse_config(load_file(config_path), str(config_path))
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    backend = config.tenants[str(config.default_tenant)].backend
    url = urlsplit(backend.url)
    assert (url.hostname, url.port, backend.version) == ("demo-agent", 9009, "0.3")


def test_compose_commands_exist() -> None:
    for command in (["demo-agent", "--help"], ["serve", "--help"]):
        proc = subprocess.run([sys.executable, "-m", "gateway.cli", *command],
                              capture_output=True, text=True, cwd=ROOT, check=False)
        assert proc.returncode == 0, proc.stderr


def test_compose_matches_compose_spec(tools: dict[str, Any]) -> None:
    proc = subprocess.run([str(TOOLS / "bin" / "check-jsonschema"), "--builtin-schema",
                           "vendor.compose-spec", str(DEPLOY / "compose.yaml")],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
