"""The container side of deploy/, validated offline: the Dockerfile (hadolint and its
essentials), config/docker.yaml, and the compose file (compose-spec schema)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gateway.config.models import parse_config
from tests.deploy.deploy_support import (
    CONFIG_PATH,
    DEPLOY,
    GRPC_PORT,
    HTTP_PORT,
    INSTALL_HINT,
    ROOT,
    TOOLS,
    _skip_or_fail,
    dockerfile_instructions,
    final_stage,
    load_file,
)

# --- Dockerfile, config/docker.yaml -----------------------------------------------------------

def test_dockerfile_essentials() -> None:
    instructions = dockerfile_instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    froms = [args for ins, args in instructions if ins == "FROM"]
    assert len(froms) >= 2, "multi-stage: install apart from the runtime"
    # One base for both stages, named by a build argument (a stand-in where no registry
    # answers: make image-test) whose default is the official slim image.
    assert instructions[0] == ("ARG", "PYTHON_IMAGE=python:3.11-slim"), instructions[0]
    assert all(re.match(r"\$\{PYTHON_IMAGE\}", f) for f in froms), froms
    assert re.search(r"\bAS build$", froms[0], re.IGNORECASE)
    final = final_stage(instructions)
    args_of = {ins: [a for i, a in final if i == ins] for ins, _ in final}

    # The build stage's virtualenv is copied whole: no wheel or pip cache reaches a layer.
    assert "--from=build /opt/a2a-gateway /opt/a2a-gateway" in args_of["COPY"]
    assert not any("/wheels" in a for a in args_of.get("COPY", []) + args_of.get("RUN", []))
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
    # `docker run IMAGE check-config` (or serve) finds the same file without --config.
    assert f"A2A_GATEWAY_CONFIG={CONFIG_PATH}" in args_of["ENV"]

    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".venv", ".venvs", ".git"} <= set(ignored), "keep the virtualenvs out of the context"


def test_hadolint(found: dict[str, Any]) -> None:
    if not found.get("hadolint"):
        _skip_or_fail(f"hadolint is not installed in {TOOLS} (test_dockerfile_essentials still "
                      f"ran); {INSTALL_HINT}")
    proc = subprocess.run([found["hadolint"], "--no-color", "--failure-threshold", "style",
                           "Dockerfile"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def check_config_cli(path: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "check-config", str(path)],
                          capture_output=True, text=True, cwd=ROOT, check=False,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout


def test_docker_config(tmp_path: Path) -> None:
    path = ROOT / "config" / "docker.yaml"
    # check-config tries the state file's directory: the image's volume, here a temp one.
    local = tmp_path / "docker.yaml"
    local.write_text(path.read_text().replace("/var/lib/a2a-gateway", str(tmp_path)))
    check_config_cli(local)
    config = parse_config(load_file(path), str(path))
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    assert config.demo_agent is None, "the image runs no in-process demo agent"


# --- deploy/compose.yaml ----------------------------------------------------------------------

def test_compose_file(tmp_path: Path) -> None:
    compose = load_file(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert set(services) == {"certs", "demo-agent", "gateway", "redis"}
    for name, service in services.items():
        if name == "redis":
            continue
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
    # Host port ranges: each replica of `--scale gateway=N` takes the next free one.
    assert all("-" in p.split(":")[1] for p in gateway["ports"]), gateway["ports"]
    assert published == {str(HTTP_PORT), str(GRPC_PORT), "9090"}
    # TLS from the certificate the certs service writes, callers' key from the environment.
    assert services["certs"]["command"][:3] == ["dev-cert", "--dir", "/etc/a2a-gateway/tls"]
    assert gateway["depends_on"]["certs"]["condition"] == "service_completed_successfully"
    assert "tls:/etc/a2a-gateway/tls:ro" in gateway["volumes"]
    assert "9090/healthz" in gateway["healthcheck"]["test"][-1]

    # check-config reads the files and secrets the config names: give it what compose
    # gives the gateway (the certs service's dev certificate, the callers' key).
    tls = tmp_path / "tls"
    subprocess.run([sys.executable, "-m", "gateway.cli", "dev-cert", "--dir", str(tls)],
                   capture_output=True, check=True)
    local = tmp_path / "compose-gateway.yaml"
    local.write_text(config_path.read_text().replace("/etc/a2a-gateway/tls", str(tls)))
    check_config_cli(local, {"A2A_GATEWAY_API_KEY": "a-key-for-the-test"})
    config = parse_config(load_file(config_path), str(config_path))
    assert config.listen.http == f"0.0.0.0:{HTTP_PORT}"
    assert config.auth is not None and config.auth.required and config.auth.server_tls
    assert config.auth.server_tls.cert_file == "/etc/a2a-gateway/tls/tls.crt"
    # Replicas share the Redis service.
    assert (config.state.backend, config.state.url) == ("redis", "redis://redis:6379/0")
    assert gateway["depends_on"]["redis"]["condition"] == "service_healthy"
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
