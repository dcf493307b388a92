"""The image tests need a container engine and build images (about 2 minutes cold): they run
under `make image-test` (A2A_IMAGE_TEST=1), not in `make test`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.image.engine import EngineUnavailable, engine, standin_bases


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("A2A_IMAGE_TEST") == "1":
        return
    skip = pytest.mark.skip(reason="builds and runs the container image: `make image-test`")
    for item in items:
        if "tests/image/" in item.nodeid:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    workdir = tmp_path_factory.mktemp("engine")
    try:
        with engine(workdir):
            standin_bases()
            yield workdir
    except EngineUnavailable as why:
        pytest.skip(f"no container engine can run here: {why}")
