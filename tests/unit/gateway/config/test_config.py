"""The YAML config: defaults, the YAML path in every error, the committed JSON Schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.models import ConfigError, json_schema, load_config, parse_config
from tests.support.helpers import ROOT


def test_default_config_loads() -> None:
    config = load_config(ROOT / "config" / "gateway.yaml")
    assert config.default_tenant == "demo"
    assert config.tenants["demo"].backend.version == "0.3"
    assert config.demo_agent is not None


def test_single_tenant_is_the_default_and_unquoted_versions_work() -> None:
    config = parse_config({"tenants": {"t": {"backend": {"url": "http://a:1/", "version": 1.0}}}})
    assert config.default_tenant == "t"
    assert config.tenants["t"].backend.version == "1.0"
    assert config.tenants["t"].backend.binding == "JSONRPC"


_MIGRATING = """\
tenants:
  shop:
    backend: {url: "http://127.0.0.1:9001/", version: 0.3}
    migration:
      candidate: {url: "http://127.0.0.1:9002/", version: 1.0}
      mode: %s
"""


@pytest.mark.parametrize("written", ["off", "Off", "'off'", "shadow"])
def test_a_migration_mode_is_read_as_written_in_yaml(tmp_path: Path, written: str) -> None:
    # YAML 1.1 reads a bare `off` (as the docs write it) as the boolean false.
    path = tmp_path / "gw.yaml"
    path.write_text(_MIGRATING % written)
    migration = load_config(path, environ={}).tenants["shop"].migration
    assert migration is not None and migration.mode == written.strip("'").lower()


def test_a_migration_mode_set_off_by_the_environment_is_off(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(_MIGRATING % "canary")
    environ = {"A2A_GATEWAY__TENANTS__SHOP__MIGRATION__MODE": "off"}
    migration = load_config(path, environ=environ).tenants["shop"].migration
    assert migration is not None and migration.mode == "off"


def test_a_migration_mode_yaml_reads_as_true_is_refused_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(_MIGRATING % "on")
    with pytest.raises(ConfigError, match=r"tenants\.shop\.migration\.mode"):
        load_config(path, environ={})


@pytest.mark.parametrize(("data", "needle"), [
    ({"tenants": {"t": {"backend": {"url": "http://a/", "version": "2.0"}}}},
     "tenants.t.backend.version"),
    ({"tenants": {"t": {"backend": {"url": "ftp://a/", "version": "0.3"}}}},
     "backend url must start with http"),
    ({"tenants": {"t": {"backend": {"url": "http://a/", "version": "0.3", "colour": 1}}}},
     "tenants.t.backend.colour"),
    ({"tenants": {"t": {"backend": {"url": "http://a/", "version": "0.3"}}},
      "listen": {"http": "8080"}}, "listen.http"),
    ({"tenants": {"t": {"backend": {"url": "http://a/", "version": "0.3"}}},
      "default_tenant": "x"}, "default_tenant 'x'"),
    ({"tenants": {"t": {"backend": {"url": "http://a/", "version": "0.3"}}},
      "loss_policy": "ignore"}, "loss_policy"),
])
def test_errors_name_the_yaml_path(data: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, "my.yaml")
    assert "my.yaml" in str(info.value)
    assert needle in str(info.value)


def test_committed_schema_is_current() -> None:
    committed = json.loads((ROOT / "config" / "gateway.schema.json").read_text())
    assert committed == json_schema(), "run: a2a-gateway schema > config/gateway.schema.json"


def test_check_config_cli(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "gateway.cli", "check-config"]
    ok = subprocess.run([*cli, str(ROOT / "config" / "gateway.yaml")], capture_output=True,
                        text=True, cwd=ROOT)
    assert ok.returncode == 0 and "OK" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("tenants:\n  t:\n    backend: {url: http://a/, version: '7'}\n")
    res = subprocess.run([*cli, str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2
    assert "tenants.t.backend.version" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(("field", "value", "where"), [
    ("owner_ttl", ".inf", "tenants.shop.migration.owner_ttl"),
    ("owner_ttl", "1.0e+16", "tenants.shop.migration.owner_ttl"),
    ("shadow", "{timeout: .nan}", "tenants.shop.migration.shadow.timeout"),
    ("rollback", "{window: .inf}", "tenants.shop.migration.rollback.window")])
def test_a_wait_or_bound_that_is_no_finite_number_is_refused_by_its_path(
        tmp_path: Path, field: str, value: str, where: str) -> None:
    # `.inf` passed: Redis then refused the owners' expiry (every new conversation got
    # 503) and the pruning task died of it.
    path = tmp_path / "gw.yaml"
    path.write_text(_MIGRATING % "canary" + f"      {field}: {value}\n")
    with pytest.raises(ConfigError, match=re.escape(where)):
        load_config(path, environ={})


def test_no_section_of_the_config_takes_an_infinite_number(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("tenants:\n  t:\n    backend: {url: 'http://127.0.0.1:9/', "
                    "version: '1.0', timeout: .inf}\n")
    with pytest.raises(ConfigError, match=r"tenants\.t\.backend\.timeout"):
        load_config(path, environ={})
