"""The image, built and run as docs/deployment.md says (its `docker` blocks, run verbatim but
for the host ports and, where no registry answers, the base image), then checked from the
outside: non-root, healthy, the README's calls and a REST and a gRPC call answered through it
with a read-only root, the version label, and no wheels left in a layer."""

from __future__ import annotations

import json
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc

from tests.image.docs_blocks import run_block
from tests.image.engine import ROOT, STANDIN_BASE, docker, wait_healthy
from tests.support.helpers import free_port

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
IMAGE = f"a2a-gateway:{VERSION}"


def _down() -> None:
    docker("rm", "-f", "-v", "a2a-gateway", "demo-agent", check=False)
    docker("network", "rm", "a2a", check=False)


@pytest.fixture(scope="module")
def gateway(docker_engine: Path) -> Iterator[tuple[int, int]]:
    http, grpc_port = free_port(), free_port()
    _down()  # what an interrupted run left
    volumes = set(docker("volume", "ls", "-q").stdout.split())
    try:
        run_block("docker", replace={
            "docker build --network=host -t":
                f"docker build --network=host --build-arg PYTHON_IMAGE={STANDIN_BASE} -t",
            "127.0.0.1:8080:8080": f"127.0.0.1:{http}:8080",
            "127.0.0.1:50051:50051": f"127.0.0.1:{grpc_port}:50051"})
        yield http, grpc_port
    finally:
        run_block("docker-down")
        left = set(docker("volume", "ls", "-q").stdout.split()) - volumes
        _down()
        if left:
            docker("volume", "rm", *left, check=False)
        # The page's clean-up removes everything its commands made.
        assert not left, f"volumes left by the docker blocks: {left}"


def _post(url: str, body: dict[str, object], **headers: str) -> tuple[str, str]:
    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=20) as answer:
        return answer.headers.get("content-type", ""), answer.read().decode()


def test_healthy_non_root_read_only(gateway: tuple[int, int]) -> None:
    seen = wait_healthy("a2a-gateway")
    assert seen[-1] == "healthy" and seen[0] in {"starting", "healthy"}, seen
    assert docker("exec", "a2a-gateway", "id", "-u").stdout.strip() == "10001"
    host = json.loads(docker("inspect", "a2a-gateway").stdout)[0]["HostConfig"]
    assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
    refused = docker("exec", "a2a-gateway", "touch", "/opt/a2a-gateway/x", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr


def test_the_readmes_calls(gateway: tuple[int, int]) -> None:
    wait_healthy("a2a-gateway")
    url = f"http://127.0.0.1:{gateway[0]}/"
    _, v03 = _post(url, {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "m1", "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}]}}})
    assert json.loads(v03)["result"]["parts"][0]["text"] == "echo: hi"
    _, v10 = _post(url, {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
        "message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "task: demo"}]}}},
        **{"A2A-Version": "1.0"})
    assert json.loads(v10)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    kind, stream = _post(url, {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage",
                               "params": {"message": {"messageId": "m3", "role": "ROLE_USER",
                                                      "parts": [{"text": "stream: 3"}]}}},
                         **{"A2A-Version": "1.0"})
    assert kind.startswith("text/event-stream")
    events = [json.loads(line[5:])["result"] for line in stream.splitlines()
              if line.startswith("data:")]
    assert sum("artifactUpdate" in e for e in events) == 3
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_rest_and_grpc(gateway: tuple[int, int]) -> None:
    wait_healthy("a2a-gateway")
    _, rest = _post(f"http://127.0.0.1:{gateway[0]}/message:send",
                    {"message": {"messageId": "r1", "role": "ROLE_USER", "parts": [{"text": "rest"}]}},
                    **{"A2A-Version": "1.0"})
    assert json.loads(rest)["message"]["parts"][0]["text"] == "echo: rest"
    with grpc.insecure_channel(f"127.0.0.1:{gateway[1]}") as channel:
        answer = pb_grpc.A2AServiceStub(channel).SendMessage(
            pb.SendMessageRequest(message=pb.Message(
                message_id="g1", role=pb.ROLE_USER, parts=[pb.Part(text="task: grpc")])),
            metadata=(("a2a-version", "1.0"),), timeout=20)
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED
    assert answer.task.artifacts


def test_version_label_and_cli(gateway: tuple[int, int]) -> None:
    labels = json.loads(docker("inspect", "-f", "{{json .Config.Labels}}", IMAGE).stdout)
    assert labels["org.opencontainers.image.version"] == VERSION
    assert docker("run", "--rm", IMAGE, "--version").stdout.strip() == f"a2a-gateway {VERSION}"


def test_no_wheels_in_a_layer(gateway: tuple[int, int]) -> None:
    """Our layers (above the base's): the virtualenv's copy and nothing else of size; the
    copy weighs what the virtualenv does, so nothing was added and deleted beside it."""
    rows = docker("history", "--no-trunc", "--human=false", "--format",
                  "{{.Size}}\t{{.CreatedBy}}", IMAGE).stdout.splitlines()
    everything = [(int(size), made) for size, made in (r.split("\t", 1) for r in rows)]
    # The base's rows are the oldest; the ones above them are the Dockerfile's.
    base_rows = len(docker("history", "-q", STANDIN_BASE).stdout.split())
    ours = everything[: len(everything) - base_rows]
    ours_big = [(s, m) for s, m in ours if s > 1_000_000]
    assert len(ours_big) == 1 and "COPY dir:" in ours_big[0][1], ours_big
    venv = int(docker("run", "--rm", "--entrypoint", "du", IMAGE, "-sb",
                      "/opt/a2a-gateway").stdout.split()[0])
    assert abs(ours_big[0][0] - venv) < venv * 0.05, (ours_big[0][0], venv)
    assert not any("wheel" in made for _, made in ours), ours
