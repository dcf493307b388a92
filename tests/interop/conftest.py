"""Interop fixtures: one deployment of real processes serves the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.interop_support import Deployment, deployment_running


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment_running(tmp_path_factory.mktemp("interop")) as running_deployment:
        yield running_deployment
