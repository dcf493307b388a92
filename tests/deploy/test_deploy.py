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

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from gateway.auth.keygen import relay_key
from gateway.config.models import GatewayConfig, PushRelayConfig, parse_config
from gateway.relay.seals import load_keys
from tests.deploy.deploy_support import (
    CHART,
    CONFIG_PATH,
    GRPC_PORT,
    HTTP_PORT,
    K8S_VERSIONS,
    MANIFESTS,
    RELAY_ENV,
    by_kind,
    gateway_deployment,
    helm_render,
    k8s_schema_errors,
    load_docs,
    load_file,
    mounted_config,
    named,
    one,
    rendered_docs,
    resolve_port,
    run_tool,
    secret_text,
)

# --- what every gateway workload must look like -----------------------------------------------

def gateway_service(docs: list[dict[str, Any]], pod_labels: dict[str, str]) -> dict[str, Any]:
    found = [d for d in by_kind(docs, "Service")
             if d["spec"]["selector"].items() <= pod_labels.items()]
    assert len(found) == 1, f"expected one Service selecting the gateway, found {len(found)}"
    return found[0]


def check_redis(docs: list[dict[str, Any]], config: GatewayConfig) -> None:
    """Replicas share one state store: a Redis Deployment and Service beside the gateway,
    named by the config's state URL, whose pods the gateway's selectors never pick."""
    assert config.state.backend == "redis" and config.state.url is not None
    host = urlsplit(config.state.url).hostname
    service = named(docs, "Service", str(host))
    (redis,) = [d for d in by_kind(docs, "Deployment") if d is not gateway_deployment(docs)]
    labels = redis["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    gateway = gateway_deployment(docs)
    assert not gateway["spec"]["selector"]["matchLabels"].items() <= labels.items()


def assert_non_root(pod_sc: dict[str, Any], sc: dict[str, Any], who: str) -> None:
    effective = {**pod_sc, **sc}
    assert effective.get("runAsNonRoot") is True, f"{who}: runAsNonRoot must be true"
    assert effective.get("runAsUser", 1) != 0, f"{who}: runAsUser 0"
    assert sc.get("allowPrivilegeEscalation") is False, f"{who}: allowPrivilegeEscalation"
    assert "ALL" in sc.get("capabilities", {}).get("drop", []), f"{who}: capabilities not dropped"
    assert not sc.get("privileged"), f"{who}: privileged"


def check_workload(docs: list[dict[str, Any]], mode: str, relay: str | None) -> GatewayConfig:
    """mode: sidecar | shared; relay: None, "rendered" (Secret among docs) or "external"
    (a Secret made out of band: `a2a-gateway keygen relay`, the manifests' first step)."""
    deployment = gateway_deployment(docs)
    template = deployment["spec"]["template"]
    pod = template["spec"]
    labels = template["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items(), "the Deployment's selector misses its own pods"
    containers = {c["name"]: c for c in pod["containers"]}
    gateway = containers["a2a-gateway"]

    # Listeners: the ports, the config's listen, the probes and the Service agree. With an
    # admin listener the probes go there (plain HTTP even when the main listener has TLS).
    ports = {p["name"]: p["containerPort"] for p in gateway["ports"]}
    assert {k: v for k, v in ports.items() if k != "admin"} == {
        "http": HTTP_PORT, "grpc": GRPC_PORT}
    probe_port = ports.get("admin", HTTP_PORT)
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = gateway[probe]["httpGet"]
        assert get["path"] == path, f"{probe} should GET {path}"
        assert resolve_port(gateway, get["port"]) == probe_port, f"{probe} port"
        assert get.get("scheme", "HTTP") == "HTTP"

    assert "command" not in gateway, "keep the image's ENTRYPOINT (a2a-gateway)"
    args = gateway.get("args", [])
    assert args[:1] == ["serve"] and args[1:3] == ["--config", CONFIG_PATH], args
    config = parse_config(yaml.safe_load(mounted_config(docs, pod, gateway)),
                          f"the {mode} ConfigMap")
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    assert config.listen.grpc == f"0.0.0.0:{GRPC_PORT}"
    assert config.listen.admin == (f"0.0.0.0:{ports['admin']}" if "admin" in ports else None)
    assert config.demo_agent is None, "no in-process demo agent in a cluster"
    # The root filesystem is read-only: the SQLite store must be on a mounted volume.
    if config.state.backend == "sqlite":
        state_dir = config.state.path.rpartition("/")[0]
        assert state_dir in {m["mountPath"] for m in gateway["volumeMounts"]}, state_dir

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
            # A key the relay loads (a placeholder would crash-loop the pod).
            keys, _ = load_keys(PushRelayConfig(), {RELAY_ENV: secret_text(secret, ref["key"])})
            assert keys and all(len(k) == 32 for k in keys)
        else:
            assert not by_kind(docs, "Secret"), "an existing Secret is referenced, not rendered"

    service = gateway_service(docs, labels)
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
        check_redis(docs, config)  # replicas share one state store
    return config


# --- deploy/kubernetes ------------------------------------------------------------------------

# The relay key's Secret is made by the documented first step (`a2a-gateway keygen relay`),
# never shipped with a placeholder; tests/deploy/test_deploy_start.py runs that step.
PLAIN = {
    "sidecar.yaml": ("sidecar", "external", {"ConfigMap", "Deployment", "Service"}),
    "shared-gateway.yaml": ("shared", "external", {"ConfigMap", "Deployment", "Service"}),
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
# Without relayKey the chart makes the key itself (test_deploy_start.py: kept on upgrades).
HELM_CASES: dict[str, tuple[dict[str, Any] | None, str, str | None]] = {
    "sidecar-defaults": (None, "sidecar", "rendered"),
    "sidecar-relay-key": ({"relayKey": {"value": relay_key()}}, "sidecar", "rendered"),
    "shared-ci-values": (SHARED_VALUES, "shared", "rendered"),
    "shared-existing-secret": (merge(SHARED_VALUES, {"relayKey": {"existingSecret": "relay"}}),
                               "shared", "external"),
    "sidecar-no-admin": ({"gateway": {"ports": {"admin": 0}}}, "sidecar", "rendered"),
}


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
    annotations = gateway_deployment(docs)["spec"]["template"]["metadata"]["annotations"]
    assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/config"])
    if case == "shared-ci-values":  # TLS from the Secret, auth, the admin port scraped
        check_tls_and_auth(docs)
        assert annotations["prometheus.io/port"] == "9090"


def check_tls_and_auth(docs: list[dict[str, Any]]) -> None:
    pod = gateway_deployment(docs)["spec"]["template"]["spec"]
    gateway = next(c for c in pod["containers"] if c["name"] == "a2a-gateway")
    config = parse_config(yaml.safe_load(mounted_config(docs, pod, gateway)), "shared")
    assert config.auth is not None and config.auth.server_tls is not None
    tls = config.auth.server_tls
    assert (tls.cert_file, tls.key_file, tls.client_ca_file, tls.client_auth) == (
        "/etc/a2a-gateway/tls/tls.crt", "/etc/a2a-gateway/tls/tls.key",
        "/etc/a2a-gateway/tls/ca.crt", "optional")
    assert config.auth.required and config.auth.jwt is not None
    mounts = {m["mountPath"]: m["name"] for m in gateway["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/etc/a2a-gateway/tls"]]["secret"]["secretName"] == "a2a-gateway-tls"
    key_file = config.auth.api_keys.keys[0].key_file if config.auth.api_keys else None
    assert key_file is not None and key_file.startswith("/etc/a2a-gateway/secrets/api-keys/")
    assert "/etc/a2a-gateway/secrets/api-keys" in mounts


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
    ({"tls": {"enabled": True}}, "tls.enabled needs tls.secretName"),
    ({"tls": {"clientAuth": "sometimes"}}, "tls.clientAuth must be none, optional or required"),
    ({"gateway": {"config": {"auth": {"server_tls": {}}}}}, "set tls.enabled"),
    ({"replicaCount": 3}, "replicaCount > 1 needs a shared state store"),
    ({"redis": {"enabled": True}, "gateway": {"config": {"state": {"path": "/x.db"}}}},
     "leave state out of gateway.config"),
], ids=["bad-mode", "shared-without-tenants", "listen-in-config", "tls-without-secret",
        "bad-client-auth", "server-tls-in-config", "replicas-without-redis",
        "redis-and-state"])
def test_helm_rejects_values_that_cannot_work(values: dict[str, Any], needle: str,
                                              helm: str) -> None:
    answer = helm_render(values)
    assert needle in answer.get("error", ""), answer


def test_helm_sidecar_matches_the_plain_manifest(helm: str) -> None:
    """The chart's sidecar defaults and deploy/kubernetes/sidecar.yaml serve the same agent."""
    chart = rendered_docs(helm_render(None)["manifests"])
    plain = load_docs((MANIFESTS / "sidecar.yaml").read_text(encoding="utf-8"))
    for docs in (chart, plain):
        pod = gateway_deployment(docs)["spec"]["template"]["spec"]
        assert sorted(c["name"] for c in pod["containers"]) == ["a2a-gateway", "legacy-agent"]

    def backend(docs: list[dict[str, Any]], relay: str) -> Any:
        config = check_workload(docs, "sidecar", relay)
        return config.tenants[config.default_tenant].backend

    assert backend(chart, "rendered") == backend(plain, "external")
