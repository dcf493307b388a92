"""Preflight is the truth (issue 27): every file-bearing option of the schema, missing,
corrupt or unreadable, makes `check-config` answer one line naming its YAML path, exit 2,
no traceback; so do bad certificates, keys, URLs and state paths. Most cells run
`gateway.cli.main` in-process (a subprocess each would cost ~1 s); a few run the real
command, `serve` included."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gateway.cli import main
from gateway.config.models import GatewayConfig
from tests.preflight.preflight_support import (
    FILE_FIELDS,
    MATRIX_OPTIONS,
    REDIS_OPTIONS,
    full_config,
    make_corrupt,
    make_missing,
    make_unreadable,
)
from tests.support.helpers import write_config

FAULTS: dict[str, Callable[[Path], None]] = {
    "missing": make_missing, "corrupt": make_corrupt, "unreadable": make_unreadable}
# What the line says besides the path, by fault (any of the words).
SAYS = {"missing": ("No such file or directory",),
        "corrupt": ("parses", "not UTF-8", "not a JSON JWK set", "not a SQLite database",
                    "Could not deserialize"),
        "unreadable": ("Is a directory", "is not a regular file", "Permission denied")}


def check(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, list[str]]:
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("redis", [False, True])
def test_the_config_with_every_file_passes(redis: bool, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = full_config(tmp_path, redis=redis)
    assert check(capsys, write_config(tmp_path / "gw.yaml", config)) == (0, [])


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("option", MATRIX_OPTIONS)
def test_each_file_option_refused_in_one_line(
        option: str, fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, files = full_config(tmp_path, redis=option in REDIS_OPTIONS)
    path = write_config(tmp_path / "gw.yaml", config)
    FAULTS[fault](files[option])
    code, err = check(capsys, path)
    if option == "state.path" and fault == "missing":
        assert (code, err) == (0, [])  # a missing SQLite file is made at start
        return
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(f"a2a-gateway: {option}: "), err
    assert any(word in err[0] for word in SAYS[fault]), err
    assert "Traceback" not in err[0]


def _file_fields(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    if model in seen:
        return out
    seen.add(model)
    for name, field in model.model_fields.items():
        if name.endswith("_file") or name in ("file", "path"):
            out.add((model.__name__, name))
        for arg in _types(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                out |= _file_fields(arg, seen)
    return out


def _types(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [t for a in args for t in _types(a)]


def test_the_matrix_covers_every_file_field_of_the_schema() -> None:
    assert _file_fields(GatewayConfig, set()) == set(FILE_FIELDS)


def test_every_problem_is_reported_each_on_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, files = full_config(tmp_path)
    config["public_url"] = "https://"
    path = write_config(tmp_path / "gw.yaml", config)
    make_missing(files["auth.server_tls.cert_file"])
    make_corrupt(files["auth.jwt.jwks_file"])
    make_unreadable(files["tenants.b.auth.api_keys.keys.0.key_file"])
    code, err = check(capsys, path)
    assert code == 2
    assert [line.split(": ")[1] for line in err] == [
        "auth.server_tls.cert_file", "auth.jwt.jwks_file",
        "tenants.b.auth.api_keys.keys.0.key_file", "public_url"], err

