"""`state:` in the config: defaults, check-config's errors, the store it opens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.models import ConfigError, parse_config
from gateway.state import StoreError, open_store
from gateway.state.redis_store import RedisStore
from gateway.state.sqlite_store import SqliteStore
from tests.support.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
TENANTS = {"t": {"backend": {"url": "http://a/", "version": "0.3"}}}


def test_default_is_sqlite() -> None:
    state = parse_config({"tenants": TENANTS}).state
    assert state.backend == "sqlite" and state.path.endswith(".db")
    assert state.retention.max_age > 0 and state.retention.max_tasks > 0


@pytest.mark.parametrize("url", [
    "redis://127.0.0.1:6379/0", "rediss://user:secret@redis.example.com:6380/2",
    "redis://redis", "rediss://redis.example.com?ssl_ca_certs=/etc/ca.pem",
    "unix:///run/redis.sock"])
def test_redis_urls_accepted(url: str) -> None:
    state = parse_config({"tenants": TENANTS,
                          "state": {"backend": "redis", "url": url}}).state
    assert state.url == url


@pytest.mark.parametrize(("state", "needle"), [
    ({"backend": "redis"}, "needs state.url"),
    ({"backend": "redis", "url": "http://redis:6379"}, "must start with redis://"),
    ({"backend": "redis", "url": "redis://:6379"}, "names no host"),
    ({"backend": "redis", "url": "redis://redis:http"}, "bad port"),
    ({"backend": "redis", "url": "redis://redis:6379/zero"}, "database number"),
    ({"backend": "redis", "url": "unix://"}, "no socket path"),
    ({"backend": "redis", "url": "redis://r", "sentinel": {"hosts": ["s:26379"],
                                                           "service": "m"}}, "name one"),
    ({"sentinel": {"hosts": ["s:26379"], "service": "m"}}, "needs state.backend: redis"),
    ({"backend": "redis", "sentinel": {"hosts": ["s:26379", "s"], "service": "m"}},
     "state.sentinel.hosts.1: Value error, expected host:port, got 's'"),
    ({"backend": "redis", "sentinel": {"hosts": [], "service": "m"}},
     "state.sentinel.hosts: List should have at least 1 item"),
    ({"backend": "redis", "sentinel": {"hosts": ["s:1"]}}, "state.sentinel.service: Field "
     "required"),
    ({"backend": "redis", "sentinel": {"hosts": ["s:1"], "service": "m",
                                       "ssl_ca_certs": "/ca.pem"}}, "needs state.sentinel.tls"),
    ({"backend": "redis", "timeout": 1, "sentinel": {"hosts": ["s:1"], "service": "m",
                                                     "ack_timeout": 1}},
     "ack_timeout must be shorter than state.timeout"),
    ({"backend": "redis", "sentinel": {"hosts": ["s:1"], "service": "m",
                                       "replica_acks": -1}}, "state.sentinel.replica_acks"),
    ({"backend": "postgres"}, "state.backend"),
    ({"path": ""}, "state.path"),
    ({"retention": {"max_age": -1}}, "state.retention.max_age"),
    ({"retention": {"max_tasks": 10, "colour": 1}}, "state.retention.colour"),
])
def test_bad_state_config(state: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"tenants": TENANTS, "state": state}, "my.yaml")
    assert needle in str(info.value)
    assert len(str(info.value).splitlines()) == 1  # one line, naming its YAML path
    assert str(info.value).startswith("my.yaml: state")


async def test_sentinel_config_opens_a_sentinel_store() -> None:
    state = parse_config({"tenants": TENANTS, "state": {"backend": "redis", "sentinel": {
        "hosts": ["127.0.0.1:1", "[::1]:2"], "service": "m", "sentinel_password_env": "SP",
        "username": "gw"}, "password_env": "PW"}}).state
    assert state.sentinel is not None and state.sentinel.replica_acks == 1
    assert state.sentinel.addresses() == [("127.0.0.1", 1), ("::1", 2)]
    store = open_store(state, {"PW": "p", "SP": "sp"})
    assert isinstance(store, RedisStore)
    with pytest.raises(StoreError, match="No master found for 'm'"):
        await store.ping()  # nothing listens there: one try, a short line
    await store.close()


async def test_open_store(tmp_path: Path) -> None:
    sqlite = open_store(parse_config({"tenants": TENANTS, "state": {
        "path": str(tmp_path / "s.db")}}).state)
    assert isinstance(sqlite, SqliteStore)
    await sqlite.ping()
    await sqlite.close()
    redis = open_store(parse_config({"tenants": TENANTS, "state": {
        "backend": "redis", "url": "redis://127.0.0.1:1/0", "key_prefix": "x:",
        "password_env": "PW"}}).state, {"PW": "secret"})
    assert isinstance(redis, RedisStore) and redis.prefix == "x:"
    await redis.close()


async def test_redis_store_reports_unreachable() -> None:
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    with pytest.raises(StoreError, match="Redis store"):
        await store.ping()
    await store.close()


async def test_redis_acl_user_and_password(redis_url: str) -> None:
    import redis.asyncio as aioredis

    admin = aioredis.Redis.from_url(redis_url)
    await admin.execute_command("ACL", "SETUSER", "gw", "on", ">s3cret", "~acl:*",
                                "+@all", "-@dangerous")
    await admin.aclose()
    host = redis_url.removeprefix("redis://")
    store = RedisStore(f"redis://gw:s3cret@{host}", "acl:")
    await store.ping()
    assert await store.seen_once("n", 60)
    await store.close()
    by_env = open_store(parse_config({"tenants": TENANTS, "state": {
        "backend": "redis", "url": f"redis://gw@{host}", "key_prefix": "acl:",
        "password_env": "PW"}}).state, {"PW": "s3cret"})
    assert not await by_env.seen_once("n", 60)
    await by_env.close()
    for url, prefix in [(f"redis://gw:wrong@{host}", "acl:"),
                        (f"redis://gw:s3cret@{host}", "other:")]:
        denied = RedisStore(url, prefix)
        with pytest.raises(StoreError):
            await denied.seen_once("n", 60)
        await denied.close()


def test_check_config_names_the_store_without_the_password(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("tenants:\n  t:\n    backend: {url: http://a/, version: '0.3'}\n"
                      "state: {backend: redis, url: 'rediss://u:hunter2@r.example:6380/1'}\n")
    res = subprocess.run([sys.executable, "-m", "gateway.cli", "check-config", str(config)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "state: redis at rediss://***@r.example:6380/1" in res.stdout
    assert "hunter2" not in res.stdout
    config.write_text("tenants:\n  t:\n    backend: {url: http://a/, version: '0.3'}\n"
                      "state: {backend: redis, url: 'http://r'}\n")
    res = subprocess.run([sys.executable, "-m", "gateway.cli", "check-config", str(config)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2 and "state" in res.stderr
    config.write_text("tenants:\n  t:\n    backend: {url: http://a/, version: '0.3'}\n"
                      "state: {backend: redis, sentinel: {hosts: ['s1:26379', 's2:26379'], "
                      "service: gw}}\n")
    res = subprocess.run([sys.executable, "-m", "gateway.cli", "check-config", str(config)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "state: redis at sentinel service gw via s1:26379,s2:26379" in res.stdout
