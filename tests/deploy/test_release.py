"""One version a user can name, and a lock that is pyproject's ranges made exact
(docs/releasing.md). pyproject.toml's `version` is the one source: every other place that
states the version is checked against it here, and the lock's pins against its ranges."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.deploy.deploy_support import CHART, MANIFESTS, ROOT, dockerfile_instructions, load_file

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
IMAGE = "example.com/a2a-gateway"


def test_the_version_is_one_semver() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION
    assert str(Version(VERSION)) == VERSION


def test_cli_prints_the_installed_version() -> None:
    # The installed metadata, not pyproject: a stale install (pyproject bumped, no
    # reinstall) fails here, as a user would see it.
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "--version"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"a2a-gateway {VERSION}"


def test_image_label_defaults_to_the_version() -> None:
    instructions = dockerfile_instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    args = [a for ins, a in instructions if ins == "ARG"]
    assert f"VERSION={VERSION}" in args, args
    labels = " ".join(a for ins, a in instructions if ins == "LABEL")
    assert 'org.opencontainers.image.version="${VERSION}"' in labels
    assert 'org.opencontainers.image.licenses="Apache-2.0"' in labels


def test_chart_app_version_and_manifest_tags() -> None:
    chart = load_file(CHART / "Chart.yaml")
    assert chart["appVersion"] == VERSION
    assert Version(str(chart["version"])) >= Version("0.1.0")
    # The chart's default image tag is its appVersion (values.yaml leaves image.tag empty).
    assert load_file(CHART / "values.yaml")["image"]["tag"] == ""
    for manifest in sorted(MANIFESTS.glob("*.yaml")):
        tags = re.findall(rf"image: {re.escape(IMAGE)}:(\S+)", manifest.read_text("utf-8"))
        assert tags and set(tags) == {VERSION}, (manifest.name, tags)
    # The pages that build and run the image name it by the version's tag.
    for page in (ROOT / "docs" / "deployment.md", ROOT / "deploy" / "README.md"):
        tags = re.findall(r"a2a-gateway:(\d+\.\d+\.\d+)", page.read_text(encoding="utf-8"))
        assert tags and set(tags) == {VERSION}, (page.name, tags)


def test_changelog_names_the_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)" in text
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.MULTILINE)
    assert releases and releases[0][0] == VERSION, releases
    assert text.index("## [Unreleased]") < text.index(f"## [{VERSION}]")
    kinds = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"]
    # Each release names each kind of change once, in Keep a Changelog's order.
    for release in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        sections = re.findall(r"^### (\w+)$", release, re.MULTILINE)
        assert set(sections) <= set(kinds), sections
        assert sections == sorted(set(sections), key=kinds.index), (release[:40], sections)


def test_license_is_the_apache_text_pyproject_declares() -> None:
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    # The nine sections of the licence and nothing added between them and its end.
    sections = re.findall(r"^   (\d+)\. [A-Z]", text, re.MULTILINE)
    assert sections == [str(n) for n in range(1, 10)], sections
    assert "END OF TERMS AND CONDITIONS" in text


# --- The lock ---------------------------------------------------------------------------------

def _pins(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile --generate-hashes file."""
    pins: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=\S)", path.read_text(encoding="utf-8")):
        head = re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", block)
        if head:
            pins[canonicalize_name(head[1])] = (head[2], block.count("--hash=sha256:"))
    return pins


RUNTIME = _pins(ROOT / "requirements" / "runtime.txt")
DEV = _pins(ROOT / "requirements" / "dev.txt")


def _check_covers(declared: list[str], pins: dict[str, tuple[str, int]]) -> None:
    for spec in declared:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared in pyproject.toml but not locked: make lock"
        assert req.specifier.contains(pins[name][0], prereleases=True), \
            f"{req.name}=={pins[name][0]} is outside pyproject's {req.specifier}: make lock"


def test_lock_covers_pyprojects_ranges() -> None:
    runtime = PYPROJECT["project"]["dependencies"]
    _check_covers(runtime, RUNTIME)
    _check_covers(runtime + PYPROJECT["project"]["optional-dependencies"]["dev"], DEV)


def test_lock_is_hashed_and_the_two_files_agree() -> None:
    assert all(hashes for _, hashes in {**RUNTIME, **DEV}.values())
    assert RUNTIME.keys() <= DEV.keys()
    assert {n: v for n, (v, _) in RUNTIME.items()} == {n: DEV[n][0] for n in RUNTIME}
    assert "pytest" not in RUNTIME and "pytest" in DEV, "the image gets no dev tools"


def test_everything_installs_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--require-hashes -r $(LOCK_DEV)" in makefile
    assert "--require-hashes -r $(LOCK_RUNTIME)" in makefile
    docker = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "--require-hashes -r /src/requirements/runtime.txt" in docker
    assert re.search(r"pip install --no-deps /src$", docker, re.MULTILINE)
