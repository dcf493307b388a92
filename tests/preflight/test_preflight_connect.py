"""`check-config --connect`: Redis, the OTLP endpoint and each backend reached once,
each attempt bounded; one line per target that cannot be reached."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web
from jwt.algorithms import ECAlgorithm

from gateway.config.models import parse_config
from gateway.preflight.connect import CONNECT_TIMEOUT, connect_problems
from tests.support.auth_pki import make_ca
from tests.support.helpers import VENV_BIN, free_port, serving, v03, write_config


@contextmanager
def silent_listener() -> Iterator[int]:
    """A port that takes connections and never answers on them."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


def test_connect_names_every_target_it_cannot_reach(tmp_path: Path) -> None:
    redis, otlp, backend, card = free_port(), free_port(), free_port(), free_port()
    config = {"tenants": {"a": v03(f"http://127.0.0.1:{backend}/"),
                          "b": {"backend": {"card": f"http://127.0.0.1:{card}/card"}}},
              "state": {"backend": "redis", "url": f"redis://127.0.0.1:{redis}/0"},
              "tracing": {"exporter": "otlp-grpc", "endpoint": f"127.0.0.1:{otlp}"}}
    path = write_config(tmp_path / "gw.yaml", config)
    began = time.monotonic()
    done = subprocess.run([str(VENV_BIN / "a2a-gateway"), "check-config", "--connect",
                           str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    def refused(port: int) -> str:
        return f"Connect call failed ('127.0.0.1', {port})"

    assert lines == [
        f"a2a-gateway: state.url: cannot reach redis://127.0.0.1:{redis}/0: Redis store "
        f"redis://127.0.0.1:{redis}/0: Error 111 connecting to 127.0.0.1:{redis}. "
        f"{refused(redis)}.",
        f"a2a-gateway: tracing.endpoint: cannot reach 127.0.0.1:{otlp}: {refused(otlp)}",
        f"a2a-gateway: tenants.a.backend.url: cannot reach http://127.0.0.1:{backend}/: "
        f"{refused(backend)}",
        f"a2a-gateway: tenants.b.backend.card: cannot reach http://127.0.0.1:{card}/card: "
        f"{refused(card)}"]
    # Without --connect the same config passes: nothing is dialled.
    quiet = subprocess.run([str(VENV_BIN / "a2a-gateway"), "check-config", str(path)],
                           capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0, quiet
    assert time.monotonic() - began < 30


async def test_each_attempt_is_bounded() -> None:
    closed = f"127.0.0.1:{free_port()}"  # gRPC keeps retrying a refused connection
    with silent_listener() as http, silent_listener() as grpc_port:
        config = parse_config({"tenants": {
            "h": v03(f"http://127.0.0.1:{http}/"),
            "g": v03(f"127.0.0.1:{grpc_port}", "1.0", "GRPC"),
            "closed": v03(closed, "1.0", "GRPC")}})
        problems = await connect_problems(config, timeout=0.5)
    assert problems == [f"tenants.h.backend.url: no answer from http://127.0.0.1:{http}/ "
                        f"within 0.5 s",
                        f"tenants.g.backend.url: no answer from 127.0.0.1:{grpc_port} "
                        f"within 0.5 s",
                        f"tenants.closed.backend.url: no answer from {closed} within 0.5 s"]
    assert CONNECT_TIMEOUT == 3.0  # the documented bound (README "What check-config checks")


async def test_targets_that_answer_pass(demo_agent: str) -> None:
    with silent_listener() as otlp:  # OTLP: a TCP connection is all that is asked
        config = parse_config({
            "tenants": {"a": v03(demo_agent),
                        "b": {"backend": {"card": f"{demo_agent}.well-known/agent-card.json"}}},
            "tracing": {"exporter": "otlp-http", "endpoint": f"http://127.0.0.1:{otlp}"}})
        assert await connect_problems(config) == []


async def test_a_card_url_must_serve_a_card() -> None:
    async def not_json(_: web.Request) -> web.Response:
        return web.Response(text="<html>hello</html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/card", not_json)
    async with serving(app) as base:
        config = parse_config({"tenants": {
            "html": {"backend": {"card": f"{base}/card"}},
            "gone": {"backend": {"card": f"{base}/nothing-here"}}}})
        problems = await connect_problems(config)
    assert problems == [
        f"tenants.html.backend.card: {base}/card serves no agent card the "
        f"gateway can read: the card is not valid JSON: Expecting value: line 1 column 1 "
        f"(char 0)",
        f"tenants.gone.backend.card: {base}/nothing-here answered HTTP 404"]


async def test_jwks_urls_are_fetched_and_read() -> None:
    jwk = json.loads(ECAlgorithm.to_jwk(make_ca("issuer").key.public_key()))

    async def jwks(_: web.Request) -> web.Response:
        return web.json_response({"keys": [jwk]})

    app = web.Application()
    app.router.add_get("/jwks", jwks)
    async with serving(app) as base:
        config = parse_config({"auth": {"jwt": {"jwks_url": f"{base}/jwks"}}, "tenants": {
            "d": v03("http://127.0.0.1:1/"),
            "t": {**v03("http://127.0.0.1:1/"),
                  "auth": {"jwt": {"jwks_url": f"{base}/gone"}}}}})
        problems = await connect_problems(config)
    assert [p for p in problems if "jwks_url" in p] == [
        f"tenants.t.auth.jwt.jwks_url: the JWK set at {base}/gone: HTTP 404"]
