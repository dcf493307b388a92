"""Runs inside the deploy-tools virtualenv (.venvs/tools, `make deploy-tools`), not the project's.

tests/deploy/test_deploy.py calls it as a subprocess: one JSON request on stdin, one JSON answer
on stdout. It wraps the libraries that have no suitable CLI:
  probe        -> which tools import, and their versions
  k8s-validate -> kubernetes-validate, strict schemas, for each resource and Kubernetes version
  helm-render  -> Helm's own template engine (helm-python-sdk: Helm v4's Go SDK), like `helm template`
  helm-lint    -> Helm's linter, like `helm lint`
"""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any


def probe(_: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"hadolint": shutil.which("hadolint", path=sys.prefix + "/bin")}
    try:
        from kubernetes_validate.version import __version__ as kv

        found["kubernetes_validate"] = kv
    except ImportError:
        found["kubernetes_validate"] = None
    try:
        import helm_python

        found["helm_python"] = helm_python.__version__
        found["helm_sdk"] = helm_python.helm_sdk_version()
    except Exception as exc:  # a missing or unloadable native library
        found["helm_python"] = None
        found["helm_error"] = f"{type(exc).__name__}: {exc}"
    return found


def k8s_validate(request: dict[str, Any]) -> dict[str, Any]:
    import kubernetes_validate.utils as kv

    results = []
    for resource in request["resources"]:
        for version in request["versions"]:
            name = f"{resource.get('kind')}/{resource.get('metadata', {}).get('name')}"
            try:
                checked = kv.validate(resource, version, strict=True)
                error = None
            except kv.ValidationError as exc:
                path = ".".join(str(p) for p in exc.path) or "(top level)"
                checked, error = version, f"{path}: {exc.message}"
            except (kv.SchemaNotFoundError, kv.VersionNotSupportedError,
                    kv.InvalidSchemaError) as exc:
                checked, error = version, exc.message
            results.append({"resource": name, "version": checked, "error": error})
    return {"results": results}


def helm_render(request: dict[str, Any]) -> dict[str, Any]:
    import helm_python as helm

    try:
        with helm.Chart.load(request["chart"]) as chart:
            manifests = chart.render(request.get("values"), name=request["name"],
                                     namespace=request["namespace"], is_install=True)
    except helm.HelmError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"manifests": manifests}


def helm_lint(request: dict[str, Any]) -> dict[str, Any]:
    import helm_python as helm

    return helm.lint(request["chart"], request.get("values"), strict=True,
                     namespace=request.get("namespace"),
                     kube_version=request.get("kube_version"))


ACTIONS = {"probe": probe, "k8s-validate": k8s_validate, "helm-render": helm_render,
           "helm-lint": helm_lint}


def main() -> int:
    request = json.load(sys.stdin)
    json.dump(ACTIONS[request["action"]](request), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
