"""Deploy-test fixtures: the tools virtualenv, probed once per session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.deploy_support import INSTALL_HINT, TOOLS, _skip_or_fail, run_tool


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
