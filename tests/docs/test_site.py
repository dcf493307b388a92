"""The docs site (mkdocs.yml, docs/): it builds in strict mode, and strict mode is on —
a broken link or a page left out of the navigation fails the build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    # Each page of the nav is rendered, the generated references and diagrams included.
    config = (site / "reference" / "configuration" / "index.html").read_text()
    assert "tenants.&lt;name&gt;.backend" in config and "max_body_bytes" in config
    assert "a2a_gateway_calls_total" in (site / "reference" / "metrics" / "index.html").read_text()
    assert "a2a-gateway check-config" in (site / "reference" / "cli" / "index.html").read_text()
    assert 'class="mermaid"' in (site / "architecture" / "index.html").read_text()
    assert "486 of 504 cells pass" in (site / "compatibility" / "index.html").read_text()


def _copy(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", project / "docs")
    return project


def test_a_broken_link_a_missing_anchor_and_a_page_out_of_the_nav_each_fail_it(
        tmp_path: Path) -> None:
    """One build of a copy of the site with the three faults: each is named (strict mode
    reports every warning before it aborts)."""
    project = _copy(tmp_path)
    page = project / "docs" / "streams.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md) and "
                    "[limits](operations.md#no-such-section).\n")
    (project / "docs" / "orphan.md").write_text("# Orphan\n")
    done = _build(project, tmp_path / "site")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Aborted with 3 warnings in strict mode" in said, said
    assert "not included in the \"nav\"" in said and "orphan.md" in said
    assert "'no-such-page.md', but the target is not found" in said
    assert "does not contain an anchor '#no-such-section'" in said
