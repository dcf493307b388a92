"""The generated reference pages (docsgen/): each committed page is what the code renders
now, and each renders all of its source — every config key, every subcommand and option,
every metric. `make docs-refs` rewrites them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from pydantic import BaseModel

import docsgen
from docsgen import __main__ as docsgen_main
from docsgen.cli_ref import _subparsers
from docsgen.cli_ref import render as render_cli
from docsgen.config_ref import _models_in
from docsgen.config_ref import render as render_config
from docsgen.metrics_ref import render as render_metrics
from gateway.cli import build_parser
from gateway.config.models import GatewayConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted(docsgen.pages(), key=str), ids=lambda p: p.name)
def test_the_committed_page_is_current(path: Path) -> None:
    render = docsgen.pages()[path]
    assert path.read_text(encoding="utf-8") == render(), (
        f"{path.relative_to(ROOT)} is stale: run `make docs-refs`")


def test_check_names_a_stale_page_and_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "docs" / "reference" / "cli.md"
    page.parent.mkdir(parents=True)
    page.write_text(render_cli().replace("hash-key", "hash-keys"), encoding="utf-8")
    monkeypatch.setattr(docsgen_main, "ROOT", tmp_path)
    monkeypatch.setattr(docsgen_main, "pages", lambda: {page: render_cli})
    assert docsgen_main.main(["--check"]) == 1
    assert "stale generated pages (run `make docs-refs`): docs/reference/cli.md" in (
        capsys.readouterr().err)
    assert docsgen_main.main([]) == 0  # rewrites it
    assert page.read_text(encoding="utf-8") == render_cli()
    assert docsgen_main.main(["--check"]) == 0


def _keys(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[str]:
    if model in seen:
        return set()
    seen.add(model)
    keys = set()
    for name, field in model.model_fields.items():
        keys.add(field.alias or name)
        for _, child in _models_in(field.annotation):
            keys |= _keys(child, seen)
    return keys


def test_the_configuration_page_has_every_key_with_a_description() -> None:
    page = render_config()
    rows = {line.split("|")[1].strip().strip("`"): line for line in page.splitlines()
            if line.startswith("| `")}
    keys = _keys(GatewayConfig, set())
    assert keys - rows.keys() == set()
    # Every row says what its key does (a new field without `description=` shows here).
    assert [key for key, line in rows.items() if line.rstrip().endswith("|  |")] == []
    assert "| `max_body_bytes` | integer | `8388608` | > 0 |" in page
    assert "| `workers` | integer \\| null | `null` | ≥ 1, ≤ 1024 |" in page


def test_the_cli_page_has_every_subcommand_and_option() -> None:
    page = render_cli()

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        assert f"`{' '.join(path)}`" in page
        for action in parser._actions:
            if action.help != argparse.SUPPRESS:
                for option in action.option_strings:
                    assert option in page, (path, option)
        for name, child in _subparsers(parser).items():
            walk(child, [*path, name])

    walk(build_parser(), ["a2a-gateway"])
    assert "--worker" not in page  # the supervisor's own flags stay hidden


def test_the_metrics_page_has_every_metric_of_the_registry() -> None:
    page = render_metrics()
    names = {c._name for c in REGISTRY._collector_to_names
             if getattr(c, "_name", "").startswith("a2a_gateway_")}
    assert len(names) >= 20
    for name in names:
        assert f"| `{name}" in page, name
    assert ("| `a2a_gateway_limit_in_use` | gauge | `limit`, `scope` | Slots held now, by "
            "limit (with workers: `livesum`) |") in page
