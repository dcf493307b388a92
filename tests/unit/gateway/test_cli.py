"""CLI conventions: --version, `python -m gateway`, where the config file comes from, the
environment overrides of any option (README "Command line"), help on every option."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from gateway.cli import build_parser
from gateway.cli import main as cli
from gateway.config.models import ConfigError, load_config
from tests.support.helpers import ROOT

DEFAULT = ROOT / "config" / "gateway.yaml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("A2A_GATEWAY__") or name in ("A2A_GATEWAY_CONFIG",
                                                        "A2A_GATEWAY_LOG_LEVEL"):
            monkeypatch.delenv(name)


def test_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"a2a-gateway {version('a2a-gateway')}\n"


def test_python_dash_m_gateway_is_the_same_cli() -> None:
    res = subprocess.run([sys.executable, "-m", "gateway", "--version"], capture_output=True,
                         text=True, timeout=60, cwd="/")
    assert (res.returncode, res.stdout) == (0, f"a2a-gateway {version('a2a-gateway')}\n")


def test_serve_without_a_config_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["serve"]) == 2
    err = capsys.readouterr().err
    assert err == (f"a2a-gateway: no config: config/gateway.yaml is not in {tmp_path}; pass "
                   f"--config FILE or set A2A_GATEWAY_CONFIG (`a2a-gateway schema` describes "
                   f"the file)\n")
    assert cli(["check-config"]) == 2
    assert "pass --config FILE or set A2A_GATEWAY_CONFIG" in capsys.readouterr().err


def test_config_path_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("A2A_GATEWAY_CONFIG", str(DEFAULT))
    assert cli(["check-config"]) == 0
    assert capsys.readouterr().out.startswith(f"{DEFAULT}: OK — 1 tenant(s)")
    # serve reads the same variable: a broken file there is refused before anything starts.
    bad = tmp_path / "bad.yaml"
    bad.write_text("tenants: {}\n")
    monkeypatch.setenv("A2A_GATEWAY_CONFIG", str(bad))
    assert cli(["serve"]) == 2
    assert capsys.readouterr().err == (f"a2a-gateway: {bad}: (top level): Value error, at "
                                       f"least one tenant is required\n")
    # An explicit argument wins over the variable.
    assert cli(["check-config", str(DEFAULT)]) == 0


def test_default_config_in_the_current_folder(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    assert cli(["check-config"]) == 0
    assert capsys.readouterr().out.startswith("config/gateway.yaml: OK")


def test_any_option_from_the_environment(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"A2A_GATEWAY__WORKERS": "3", "A2A_GATEWAY__MAX_BODY_BYTES": "1024",
           "A2A_GATEWAY__LIMITS__POOL_WAIT": "2.5",
           # an existing key matches whatever its case; a version reads as in YAML
           "A2A_GATEWAY__TENANTS__DEMO__BACKEND__VERSION": "1.0",
           "A2A_GATEWAY__PUSH_RELAY__WEBHOOK_ALLOWLIST": '["127.0.0.1", "::1"]',
           "A2A_GATEWAY__STATE": "{backend: sqlite, path: /tmp/x.db}",
           "A2A_GATEWAY__PUBLIC_GRPC": "",  # empty: ignored
           "A2A_GATEWAY_LOG_LEVEL": "debug"}
    config = load_config(DEFAULT, env)
    assert (config.workers, config.max_body_bytes, config.limits.pool_wait) == (3, 1024, 2.5)
    assert config.tenants["demo"].backend.version == "1.0"
    assert config.push_relay.webhook_allowlist == ["127.0.0.1", "::1"]
    assert (config.state.path, config.public_grpc, config.log.level) == ("/tmp/x.db", None,
                                                                         "debug")
    # The generic prefix wins over the shorthand; a list item is reached by its index.
    tree = {"A2A_GATEWAY_LOG_LEVEL": "debug", "A2A_GATEWAY__LOG__LEVEL": "error",
            "A2A_GATEWAY__VERSIONS__1": "1.0", "A2A_GATEWAY__VERSIONS__0": "0.3"}
    with_list = tmp_path / "gw.yaml"
    with_list.write_text(DEFAULT.read_text() + "versions: ['1.0', '0.3']\n")
    config = load_config(with_list, tree)
    assert (config.log.level, config.versions) == ("error", ["0.3", "1.0"])
    # What the CLI loads is the same.
    monkeypatch.setenv("A2A_GATEWAY__WORKERS", "3")
    assert cli(["check-config", str(DEFAULT)]) == 0
    assert "  workers: 3 (workers)\n" in capsys.readouterr().out


@pytest.mark.parametrize(("env", "message"), [
    ({"A2A_GATEWAY__WORKERS": "many"},
     "gw.yaml: workers: Input should be a valid integer, unable to parse string as an integer "
     "(env A2A_GATEWAY__WORKERS)"),
    ({"A2A_GATEWAY__LIMITS__POOL_WAITT": "1"},
     "gw.yaml: limits.pool_waitt: Extra inputs are not permitted (env A2A_GATEWAY__LIMITS__POOL_WAITT)"),
    ({"A2A_GATEWAY_LOG_LEVEL": "loud"},
     "gw.yaml: log.level: Input should be 'debug', 'info', 'warning' or 'error' "
     "(env A2A_GATEWAY_LOG_LEVEL)"),
    ({"A2A_GATEWAY__NEW_SECTION__X": "1"},
     "gw.yaml: new_section: Extra inputs are not permitted (env A2A_GATEWAY__NEW_SECTION__X)"),
    ({"A2A_GATEWAY__LISTEN__HTTP__PORT": "1"},
     ": env A2A_GATEWAY__LISTEN__HTTP__PORT: listen.http is not a mapping (it is "
     "'127.0.0.1:8080'), so it has no 'port'"),
    ({"A2A_GATEWAY__VERSIONS__5": "1.0"},
     ": env A2A_GATEWAY__VERSIONS__5: versions is a list of 2: '5' is not an index into it"),
    ({"A2A_GATEWAY__LIMITS____X": "1"},
     ": env A2A_GATEWAY__LIMITS____X: empty part in the path (parts are separated by exactly "
     "two underscores)"),
    ({"A2A_GATEWAY__WORKERS": "[1"}, ": env A2A_GATEWAY__WORKERS: not a YAML value: "),
], ids=["bad-int", "unknown-option", "log-level", "unknown-section", "into-a-scalar",
        "bad-index", "empty-part", "bad-yaml"])
def test_a_bad_override_names_its_variable_and_path(env: dict[str, str], message: str,
                                                    tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(DEFAULT.read_text() + "versions: ['1.0', '0.3']\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config, env)
    assert message in str(caught.value), str(caught.value)


def _options(parser: argparse.ArgumentParser, where: str) -> list[tuple[str, argparse.Action]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _options(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{where} {'/'.join(action.option_strings) or action.dest}", action))
    return found


def test_every_option_has_help() -> None:
    options = _options(build_parser(), "a2a-gateway")
    assert len(options) >= 20
    missing = [name for name, action in options if not action.help]
    assert missing == []


def test_make_run_installs_the_runtime_and_starts_one_worker(tmp_path: Path) -> None:
    """`make run` (dry run, into a venv that does not exist yet): the runtime dependencies
    only, one worker, WORKERS=N for more (the config's own `workers` stays for `serve`)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def dry(*extra: str) -> list[str]:
        # Under `make test` this is a sub-make: it would print "make[1]: Leaving
        # directory" lines, so it runs as a make of its own.
        env = {k: v for k, v in os.environ.items()
               if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
        res = subprocess.run(["make", "--no-print-directory", "-n", "run",
                              f"VENV={tmp_path}/venv", *extra],
                             capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
        assert res.returncode == 0, res.stderr
        return res.stdout.splitlines()

    lines = dry()
    installs = [line for line in lines if " install " in line]
    # The runtime lock, hashes checked, then the gateway alone (docs/releasing.md "The lock").
    assert installs == [
        f"{tmp_path}/venv/bin/pip install --disable-pip-version-check -q --require-hashes "
        "-r requirements/runtime.txt",
        f"{tmp_path}/venv/bin/pip install --disable-pip-version-check -q --no-deps -e ."]
    assert lines[-1].startswith("A2A_GATEWAY__WORKERS=1 ")
    assert lines[-1].endswith(f"{tmp_path}/venv/bin/a2a-gateway serve --config "
                              f"config/gateway.yaml")
    assert dry("WORKERS=3")[-1].startswith("A2A_GATEWAY__WORKERS=3 ")
