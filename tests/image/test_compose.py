"""The compose recipe (deploy/compose.yaml) started as docs/deployment.md says, with the
compose this machine has (docker-compose v1), Redis and TLS, then called through: the card
and a call over HTTPS with the API key, a refusal without it, gRPC over TLS, the admin
listener, and the task index written to the shared Redis."""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc

from tests.image.docs_blocks import run_block
from tests.image.engine import ROOT, STANDIN_BASE, STANDIN_REDIS, docker, wait_healthy

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
COMPOSE = ["docker-compose", "-p", "a2a-gateway", "-f", "deploy/compose.yaml"]
CA = Path("/tmp/a2a-gateway-ca.crt")
# Where no registry answers: the stand-ins, through the variables the compose file reads.
ENV = {"A2A_GATEWAY_PYTHON_IMAGE": STANDIN_BASE, "A2A_GATEWAY_REDIS_IMAGE": STANDIN_REDIS}
# Compose reads the whole file for every command: `ps`, `port` and `down` want the two keys
# set too (in the page they run in the shell that exported them); any value does for them.
KEYS_SET = {"A2A_GATEWAY_RELAY_KEYS": "set", "A2A_GATEWAY_API_KEY": "set"}


def compose(*args: str) -> str:
    proc = subprocess.run([*COMPOSE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **ENV, **KEYS_SET})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def stack(docker_engine: Path) -> Iterator[dict[str, object]]:
    if not docker("images", "-q", f"a2a-gateway:{VERSION}").stdout.strip():
        # The keys are made with the image the page's docker block builds (test_image.py).
        docker("build", "--network=host", f"--build-arg=PYTHON_IMAGE={STANDIN_BASE}",
               "-t", f"a2a-gateway:{VERSION}", str(ROOT), timeout=900)
    run_block("compose-down", env=ENV | KEYS_SET)  # what an interrupted run left
    volumes = set(docker("volume", "ls", "-q").stdout.split())
    try:
        out = run_block("compose", env=ENV)
        ports = re.findall(r"^127\.0\.0\.1:(\d+)$", out, re.MULTILINE)
        assert len(ports) == 1, out
        (gateway,) = compose("ps", "-q", "gateway").split()
        wait_healthy(gateway)
        key = docker("exec", gateway, "printenv", "A2A_GATEWAY_API_KEY").stdout.strip()
        yield {"https": int(ports[0]), "key": key, "gateway": gateway,
               "grpc": int(compose("port", "gateway", "50051").strip().rsplit(":", 1)[1]),
               "admin": int(compose("port", "gateway", "9090").strip().rsplit(":", 1)[1])}
    finally:
        run_block("compose-down", env=ENV | KEYS_SET)
        CA.unlink(missing_ok=True)
        left = set(docker("volume", "ls", "-q").stdout.split()) - volumes
        if left:
            docker("volume", "rm", *left, check=False)
        assert not left, f"volumes left by the compose blocks: {left}"


def _https(stack: dict[str, object], path: str, body: dict[str, object] | None = None,
           key: str | None = None) -> tuple[int, dict[str, object]]:
    tls = ssl.create_default_context(cafile=str(CA))
    headers = {"content-type": "application/json"} | ({"X-API-Key": key} if key else {})
    request = urllib.request.Request(f"https://localhost:{stack['https']}{path}", headers=headers,
                                     data=json.dumps(body).encode() if body else None)
    try:
        with urllib.request.urlopen(request, timeout=20, context=tls) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_tls_and_the_api_key(stack: dict[str, object]) -> None:
    status, card = _https(stack, "/.well-known/agent-card.json", key=str(stack["key"]))
    assert status == 200 and card["name"], card
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "c1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}}
    status, answer = _https(stack, "/", send, key=str(stack["key"]))
    assert status == 200 and answer["result"]["parts"][0]["text"] == "echo: hi", answer
    status, refused = _https(stack, "/", send)
    assert status == 401 and refused["error"]["code"] != 0, refused
    with urllib.request.urlopen(f"http://127.0.0.1:{stack['admin']}/healthz", timeout=10) as ok:
        assert ok.status == 200


def test_grpc_over_tls_and_state_in_redis(stack: dict[str, object]) -> None:
    credentials = grpc.ssl_channel_credentials(CA.read_bytes())
    with grpc.secure_channel(f"localhost:{stack['grpc']}", credentials) as channel:
        answer = pb_grpc.A2AServiceStub(channel).SendMessage(
            pb.SendMessageRequest(message=pb.Message(
                message_id="c2", role=pb.ROLE_USER, parts=[pb.Part(text="task: compose")])),
            metadata=(("a2a-version", "1.0"), ("x-api-key", str(stack["key"]))), timeout=20)
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED
    (redis,) = compose("ps", "-q", "redis").split()
    keys = docker("exec", redis, "redis-cli", "--scan").stdout
    assert answer.task.id in keys, keys[:2000]
