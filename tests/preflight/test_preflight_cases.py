"""Preflight beyond missing files: certificates out of date, keys that are not the
certificate's, relay keys of the wrong form, a state path that cannot be written, URLs
that do not parse; and the defect of issue 27 as a user met it, through the real
command: `check-config` said OK, `serve` died with a traceback."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from gateway.cli import main
from tests.preflight.preflight_support import AS_ROOT, full_config, make_missing
from tests.support.auth_pki import issue, make_ca
from tests.support.helpers import VENV_BIN, v03, write_config


def _minimal(**extra: Any) -> dict[str, Any]:
    return {"tenants": {"d": v03("http://127.0.0.1:1/")}, **extra}


def _check(capsys: pytest.CaptureFixture[str], tmp: Path, config: dict[str, Any],
           ) -> list[str]:
    code = main(["check-config", str(write_config(tmp / "gw.yaml", config))])
    err = capsys.readouterr().err.splitlines()
    assert code == 2, err
    assert not any("Traceback" in line for line in err)
    return err


def _tls_files(tmp: Path, **issued: Any) -> dict[str, str]:
    ca = make_ca()
    cert, key = issue(ca, "gateway", server=True, **issued).write(tmp, "server")
    ca_file = tmp / "ca.pem"
    ca_file.write_bytes(ca.cert_pem)
    return {"cert_file": cert, "key_file": key, "client_ca_file": str(ca_file)}


def test_an_expired_certificate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    tls = _tls_files(tmp_path, not_after=past)
    err = _check(capsys, tmp_path, _minimal(auth={"server_tls": tls}))
    assert err == [f"a2a-gateway: auth.server_tls.cert_file: the certificate in "
                   f"{tls['cert_file']} expired on {past:%Y-%m-%d %H:%M} UTC"]


def test_a_key_that_is_not_the_certificates(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    tls = _tls_files(tmp_path)
    other = tmp_path / "other.key"
    other.write_bytes(issue(make_ca(), "someone").key_pem)
    backend_tls = {"cert_file": tls["cert_file"], "key_file": str(other)}
    err = _check(capsys, tmp_path, _minimal(auth={"backend_tls": backend_tls}))
    assert err == [f"a2a-gateway: auth.backend_tls.key_file: {other} is not the key of "
                   f"the certificate in {tls['cert_file']}"]


def test_an_encrypted_key_and_a_key_in_place_of_a_certificate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tls = _tls_files(tmp_path)
    locked = tmp_path / "locked.key"
    locked.write_bytes(make_ca().key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    tls = {**tls, "cert_file": tls["key_file"], "key_file": str(locked)}
    err = _check(capsys, tmp_path, _minimal(auth={"server_tls": tls}))
    assert err == [
        f"a2a-gateway: auth.server_tls.cert_file: {tls['cert_file']} holds no PEM "
        f"certificate that parses",
        f"a2a-gateway: auth.server_tls.key_file: {locked} holds an encrypted private key; "
        f"the gateway reads keys without a password"]


@pytest.mark.parametrize("key", ["c2hvcnQ=", "not base64 at all!"])
def test_relay_keys_of_the_wrong_form(key: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    err = _check(capsys, tmp_path, _minimal(push_relay={"keys": [key]}))
    assert len(err) == 1 and err[0].startswith(
        f"a2a-gateway: {tmp_path / 'gw.yaml'}: push_relay.keys: Value error, a relay key "
        f"is 32 random bytes in base64"), err
    # From the environment: preflight reads it, the same rule serve applies.
    path = write_config(tmp_path / "env.yaml", _minimal())
    done = subprocess.run([str(VENV_BIN / "a2a-gateway"), "check-config", str(path)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "A2A_GATEWAY_RELAY_KEYS": key})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "a2a-gateway: push_relay.keys_env: env A2A_GATEWAY_RELAY_KEYS: every relay key "
        "must be 16, 24 or 32 bytes in base64 (make one with: a2a-gateway keygen relay)"]


def test_a_state_path_that_cannot_be_written(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain-file"
    plain.write_text("x")
    err = _check(capsys, tmp_path, _minimal(state={"path": str(plain / "sub" / "s.db")}))
    assert err == [f"a2a-gateway: state.path: cannot make the directory of "
                   f"{plain / 'sub' / 's.db'}: {plain} is not a directory"]
    if AS_ROOT:
        return  # root writes in any directory; the case above stands for it
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = _check(capsys, tmp_path, _minimal(state={"path": str(locked / "s.db")}))
    assert err == [f"a2a-gateway: state.path: cannot write in {locked}: permission denied"]


def test_schema_errors_are_one_line_each(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = _minimal(listen={"http": "nope"})
    config["tenants"]["d"]["backend"]["version"] = "7"
    err = _check(capsys, tmp_path, config)
    assert err == [
        f"a2a-gateway: {tmp_path / 'gw.yaml'}: listen.http: Value error, expected host:port, "
        f"got 'nope'",
        f"a2a-gateway: {tmp_path / 'gw.yaml'}: tenants.d.backend.version: Input should be "
        f"'0.3' or '1.0'"]


def test_urls_that_do_not_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _minimal(public_url="https://", public_grpc="gateway.example",
                      tracing={"exporter": "otlp-http", "endpoint": "localhost:4318"})
    config["tenants"]["d"]["backend"] = {"card": "http://agent.example:port/card"}
    err = _check(capsys, tmp_path, config)
    assert err == [
        "a2a-gateway: public_url: 'https://' names no host",
        "a2a-gateway: tenants.d.backend.card: 'http://agent.example:port/card' has a bad port",
        "a2a-gateway: public_grpc: expected host:port, got 'gateway.example'",
        "a2a-gateway: tracing.endpoint: 'localhost:4318' is not an http:// or https:// URL"]


@pytest.mark.parametrize("option", ["auth.server_tls.cert_file",
                                    "auth.api_keys.keys.0.key_file", "auth.jwt.jwks_file"])
def test_check_config_and_serve_refuse_a_missing_file_in_one_line(
        option: str, tmp_path: Path) -> None:
    """The defect as reproduced: check-config said OK, serve died with a traceback."""
    config, files = full_config(tmp_path)
    path = write_config(tmp_path / "gw.yaml", config)
    make_missing(files[option])
    # serve for each (its traceback was the defect); the real check-config once (the
    # matrix runs it in-process for every option).
    commands = [["serve", "--config", str(path)]]
    if option == "auth.server_tls.cert_file":
        commands.append(["check-config", str(path)])
    for command in commands:
        done = subprocess.run([str(VENV_BIN / "a2a-gateway"), *command], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2, done
        assert done.stderr.splitlines() == [
            f"a2a-gateway: {option}: cannot read {'secret file ' if 'api_keys' in option else ''}"
            f"{files[option]}: No such file or directory"], done


def test_a_migration_candidate_is_checked_as_a_backend_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _minimal()
    config["tenants"]["d"]["migration"] = {
        "candidate": {"card": "http://successor.example:port/card"}, "mode": "canary"}
    err = _check(capsys, tmp_path, config)
    assert err == ["a2a-gateway: tenants.d.migration.candidate.card: "
                   "'http://successor.example:port/card' has a bad port"]
    config["tenants"]["d"]["migration"] = {
        "candidate": {"url": "http://successor.example/", "version": "1.0"},
        "shadow": {"operations": ["CreateTaskPushNotificationConfig"]}}
    err = _check(capsys, tmp_path, config)
    assert len(err) == 1 and err[0].startswith(
        f"a2a-gateway: {tmp_path / 'gw.yaml'}: tenants.d.migration.shadow: Value error, "
        "shadow.operations: 'CreateTaskPushNotificationConfig' cannot be mirrored"), err


@pytest.mark.parametrize(("ignore", "why"), [
    ("artifacts[", "not a path pattern: 'artifacts[' (at 9)"),
    ("", "an empty path pattern would ignore everything")])
def test_a_shadow_ignore_path_the_comparison_cannot_read_is_refused_by_its_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], ignore: str, why: str) -> None:
    # It passed check-config, and serve (or a reload) then failed with a traceback when
    # it built the tenant's comparison.
    config = _minimal()
    config["tenants"]["d"]["migration"] = {
        "candidate": {"url": "http://successor.example/", "version": "1.0"},
        "mode": "shadow", "shadow": {"compare": {"ignore": ["metadata", ignore]}}}
    assert _check(capsys, tmp_path, config) == [
        f"a2a-gateway: {tmp_path / 'gw.yaml'}: tenants.d.migration.shadow.compare.ignore: "
        f"Value error, {why}"]
