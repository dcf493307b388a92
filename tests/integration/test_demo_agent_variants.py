"""`--answer-variant`: the demo agent answering slightly differently, on either protocol,
exactly as documented (docs/quickstart.md, "The demo agent"): only a task's first
artifact changes, as it is first written."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.demo.agent import main as demo_main
from gateway.demo.server import build_app

JSON = dict[str, Any]
# A part, whatever the protocol: ("text", text), ("data", {...}) or ("file", name).
Part = tuple[str, Any]
Agent = Callable[[str], Any]


def _j03_part(part: JSON) -> Part:
    kind = part["kind"]
    return (kind, part["file"]["name"] if kind == "file" else part[kind])


def _p10_part(part: JSON) -> Part:
    if "raw" in part:
        return ("file", part["filename"])
    return ("text", part["text"]) if "text" in part else ("data", part["data"])


class Caller:
    """Blocking sends to one agent in its protocol's wire; answers as plain parts."""

    def __init__(self, client: TestClient[Any, Any], protocol: str) -> None:
        self.client, self.protocol = client, protocol

    async def send(self, text: str, task_id: str | None = None) -> JSON:
        if self.protocol == "0.3":
            message: JSON = {"kind": "message", "role": "user",
                             "parts": [{"kind": "text", "text": text}]}
            method, headers = "message/send", {}
        else:
            message = {"role": "ROLE_USER", "parts": [{"text": text}]}
            method, headers = "SendMessage", {"A2A-Version": "1.0"}
        message["messageId"] = str(uuid.uuid4())
        if task_id:
            message["taskId"] = task_id
        response = await self.client.post("/", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}})
        answer: JSON = (await response.json())["result"]
        return answer if self.protocol == "0.3" else next(iter(answer.values()))

    def artifacts(self, task: JSON) -> list[list[Part]]:
        part = _j03_part if self.protocol == "0.3" else _p10_part
        return [[part(p) for p in a["parts"]] for a in task.get("artifacts", [])]

    async def conversation(self) -> dict[str, Any]:
        """The artifacts of each skill's task, and the echo's parts."""
        echo = await self.send("hello")
        part = _j03_part if self.protocol == "0.3" else _p10_part
        asked = await self.send("input: tea")
        return {
            "echo": [part(p) for p in echo["parts"]],
            "task": self.artifacts(await self.send("task: a kite")),
            "stream": self.artifacts(await self.send("stream: 3")),
            "answer": self.artifacts(await self.send("China", asked["id"])),
        }


@pytest.fixture
async def agents() -> AsyncIterator[Callable[[str, str | None], Any]]:
    clients: list[TestClient[Any, Any]] = []

    async def start(protocol: str, variant: str | None) -> Caller:
        app = build_app(protocol="1.0" if protocol == "1.0" else "0.3",
                        answer_variant=variant, chunk_interval=0.001)
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return Caller(client, protocol)

    yield start
    for client in clients:
        await client.close()


PROTOCOLS = ["0.3", "1.0"]
BLOB = ("file", "blob.bin")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_without_a_variant(agents: Any, protocol: str) -> None:
    plain = await (await agents(protocol, None)).conversation()
    assert plain == {
        "echo": [("text", "echo: hello")],
        "task": [[("text", "built a kite"), BLOB, ("data", {"k": 1})]],
        "stream": [[("text", "chunk 0"), ("text", "chunk 1"), ("text", "chunk 2")]],
        "answer": [[("text", "tea from China")]],
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_artifact_text(agents: Any, protocol: str) -> None:
    varied = await (await agents(protocol, "artifact-text")).conversation()
    assert varied == {
        "echo": [("text", "echo: hello")],  # a Message, no artifact: as usual
        "task": [[("text", "built a kite (v2)"), BLOB, ("data", {"k": 1})]],
        # The artifact's first chunk; the chunks appended later are as usual.
        "stream": [[("text", "chunk 0 (v2)"), ("text", "chunk 1"), ("text", "chunk 2")]],
        "answer": [[("text", "tea from China (v2)")]],
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_data_field(agents: Any, protocol: str) -> None:
    varied = await (await agents(protocol, "data-field")).conversation()
    variant = ("data", {"variant": "v2"})
    assert varied == {
        "echo": [("text", "echo: hello")],
        "task": [[("text", "built a kite"), BLOB, ("data", {"k": 1, "variant": "v2"})]],
        "stream": [[("text", "chunk 0"), variant, ("text", "chunk 1"), ("text", "chunk 2")]],
        "answer": [[("text", "tea from China"), variant]],
    }


def test_unknown_variant_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        demo_main(["--answer-variant", "louder"])
    assert refused.value.code == 2
    assert "invalid choice: 'louder' (choose from 'artifact-text', 'data-field')" in \
        capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown answer variant 'louder'"):
        build_app(answer_variant="louder")
