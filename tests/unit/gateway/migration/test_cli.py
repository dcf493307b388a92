"""`a2a-gateway migration` (gateway/migration/cli.py): which URL it asks (--admin, else the
config's admin listener, else its main listener reached on the loopback), with which
credential, and how it says that nothing answered (exit 2, naming the URL)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.cli import build_parser
from gateway.cli import main as cli
from gateway.config.models import ConfigError, GatewayConfig, parse_config
from gateway.migration.cli import Call, admin_url, key_headers, plan, show
from tests.support.helpers import free_port, serving
from tests.support.migration_sample import sample_report

BACKEND = {"backend": {"url": "http://127.0.0.1:9009/", "version": "0.3"}}
KEYS = {"keys": [{"principal": "ops", "sha256": "0" * 64}]}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("A2A_GATEWAY__") or name == "A2A_GATEWAY_CONFIG":
            monkeypatch.delenv(name)


def config(**extra: Any) -> GatewayConfig:
    return parse_config({"tenants": {"travel": BACKEND}, **extra})


@pytest.mark.parametrize("listen, url", [
    ({"http": "127.0.0.1:8080", "admin": "127.0.0.1:9090"}, "http://127.0.0.1:9090"),
    ({"http": "0.0.0.0:8080", "admin": "0.0.0.0:9090"}, "http://127.0.0.1:9090"),
    ({"http": "0.0.0.0:8080"}, "http://127.0.0.1:8080"),
    ({"http": "[::]:8080"}, "http://127.0.0.1:8080"),
    ({"http": "[::1]:8080"}, "http://[::1]:8080"),
    ({"http": "gw.internal:8080"}, "http://gw.internal:8080"),
])
def test_the_url_comes_from_the_config(listen: dict[str, str], url: str) -> None:
    assert admin_url(config(listen=listen), None) == url


def test_the_main_listener_with_tls_is_asked_over_https(tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    tls = {"server_tls": {"cert_file": str(cert), "key_file": str(key)}}
    with_tls = config(listen={"http": "0.0.0.0:8443"}, auth=tls)
    assert admin_url(with_tls, None) == "https://127.0.0.1:8443"
    # The admin listener is plain HTTP whatever the main one is.
    with_admin = config(listen={"http": "0.0.0.0:8443", "admin": "127.0.0.1:9090"}, auth=tls)
    assert admin_url(with_admin, None) == "http://127.0.0.1:9090"


@pytest.mark.parametrize("given, url", [
    ("http://10.0.0.5:9090/", "http://10.0.0.5:9090"),
    ("10.0.0.5:9090", "http://10.0.0.5:9090"),
    ("https://gw.example.com/ops/", "https://gw.example.com/ops"),
])
def test_admin_overrides_the_config(given: str, url: str) -> None:
    assert admin_url(config(listen={"admin": "127.0.0.1:9090"}), given) == url
    assert admin_url(None, given) == url


def test_no_config_and_no_admin_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="pass --admin URL or --config FILE"):
        admin_url(None, None)


def test_the_api_key_goes_in_the_header_the_gateway_reads() -> None:
    env = {"OPS_KEY": " secret-0123456789\n"}
    assert key_headers(None, None, env) == {}
    assert key_headers(None, "OPS_KEY", env) == {"x-api-key": "secret-0123456789"}
    assert key_headers(config(auth={"api_keys": {**KEYS, "header": "X-Ops-Key"}}),
                       "OPS_KEY", env) == {"x-ops-key": "secret-0123456789"}
    only_authorization = config(auth={"api_keys": {**KEYS, "header": None,
                                                   "authorization_schemes": ["ApiKey"]}})
    assert key_headers(only_authorization, "OPS_KEY", env) == {
        "Authorization": "ApiKey secret-0123456789"}
    with pytest.raises(ConfigError, match="environment variable NONE is empty or unset"):
        key_headers(None, "NONE", env)


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["migration", *argv])


def test_each_command_asks_its_route() -> None:
    admin = ("--admin", "http://127.0.0.1:9090")
    assert plan(_args("report", "travel", *admin), None) == Call(
        "GET", "http://127.0.0.1:9090/_admin/migration/travel?last=20", {})
    assert plan(_args("report", "a b/c", "--last", "200", *admin), None).url == \
        "http://127.0.0.1:9090/_admin/migration/a%20b%2Fc?last=200"
    assert plan(_args("report", *admin), None).url == "http://127.0.0.1:9090/_admin/migration"
    for action in ("promote", "rollback"):
        assert plan(_args(action, "travel", *admin), None) == Call(
            "POST", f"http://127.0.0.1:9090/_admin/migration/travel/{action}", {})


def test_admin_spares_the_search_for_a_config() -> None:
    # main() finds a config for commands with a config_arg; --admin needs none.
    assert _args("report", "travel").config_arg == "config"
    assert _args("report", "travel", "--admin", "http://127.0.0.1:9").config_arg is None
    assert _args("promote", "travel", "--admin", "http://127.0.0.1:9").config_arg is None


@pytest.mark.parametrize("last", ["0", "201", "ten", "-1"])
def test_a_bad_last_is_refused_by_the_parser(last: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        _args("report", "travel", "--last", last)
    assert done.value.code == 2
    assert "--last: a whole number from 1 to 200" in capsys.readouterr().err


def test_json_prints_the_answer_as_it_came_and_the_table_renders_it() -> None:
    body = '{"tenant": "travel",  "mode": "canary", "share": 0.3, "configured_share": 0.3}'
    assert show(_args("report", "travel", "--json"), body) == body + "\n"
    full = json.dumps(sample_report())
    assert "artifacts[0].parts[0].text" in show(_args("report", "travel"), full)
    assert show(_args("promote", "travel"), full) == (
        "promote: travel (canary): the candidate gets 30% of new conversations\n")


def test_an_unreachable_gateway_is_exit_2_naming_the_url(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert cli(["migration", "report", "travel", "--admin", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"a2a-gateway: cannot reach the gateway's admin API at {url}"
                          "/_admin/migration/travel?last=20: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("body", ['["travel"]', "null", "42", '"report"',
                                  "<html>a proxy's page</html>"])
async def test_an_answer_that_is_not_a_json_object_is_one_line_and_exit_1(
        body: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Whatever answers 200 there (a proxy, another service) is not the admin API.
    async def answer(_: web.Request) -> web.Response:
        return web.Response(text=body, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/_admin/migration{tail:.*}", answer)
    async with serving(app) as url:
        for argv, path in ((["report", "travel"], "/travel?last=20"), (["report"], ""),
                           (["promote", "travel"], "/travel/promote")):
            assert await asyncio.to_thread(cli, ["migration", *argv, "--admin", url]) == 1
            assert capsys.readouterr() == ("", f"a2a-gateway: {url}/_admin/migration{path} "
                                               "did not answer a JSON object\n")


def test_the_url_is_read_from_the_config_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    path = tmp_path / "gateway.yaml"
    path.write_text(f"listen: {{http: '0.0.0.0:8080', admin: '0.0.0.0:{port}'}}\n"
                    "tenants: {travel: {backend: {url: 'http://127.0.0.1:9009/', "
                    "version: '0.3'}}}\n", encoding="utf-8")
    assert cli(["migration", "rollback", "travel", "--config", str(path)]) == 2
    assert (f"cannot reach the gateway's admin API at http://127.0.0.1:{port}"
            "/_admin/migration/travel/rollback") in capsys.readouterr().err


def test_without_config_nor_admin_url_it_says_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["migration", "report", "travel"]) == 2
    assert "no config" in capsys.readouterr().err


def test_an_unset_key_variable_is_said_before_anything_is_sent(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["migration", "report", "travel", "--admin", "http://127.0.0.1:9",
                "--api-key-env", "A2A_TEST_NO_SUCH_VARIABLE"]) == 2
    assert "A2A_TEST_NO_SUCH_VARIABLE is empty or unset" in capsys.readouterr().err
