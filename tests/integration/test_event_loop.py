"""`event_loop: uvloop`: the whole gateway (HTTP and gRPC listeners, backends, streams,
shutdown) on uvloop, as `serve` runs it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb

from tests.support.helpers import VENV_BIN, free_port, running, stop_process, write_config


def _config(port: int, grpc_port: int, demo: int) -> dict[str, object]:
    return {"listen": {"http": f"127.0.0.1:{port}", "grpc": f"127.0.0.1:{grpc_port}"},
            "demo_agent": {"listen": f"127.0.0.1:{demo}"}, "event_loop": "uvloop",
            "tenants": {"demo": {"backend": {"url": f"http://127.0.0.1:{demo}/",
                                             "version": "0.3"}}}}


async def test_serve_on_uvloop(tmp_path: Path) -> None:
    port, grpc_port, demo = free_port(), free_port(), free_port()
    path = write_config(tmp_path / "gw.yaml", _config(port, grpc_port, demo))
    cmd = [str(VENV_BIN / "a2a-gateway"), "serve", "--config", str(path)]
    with running(cmd, port, log=tmp_path / "gw.log") as proc:
        async with aiohttp.ClientSession() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
                "message": {"kind": "message", "messageId": "m1", "role": "user",
                            "parts": [{"kind": "text", "text": "hi"}]}}}
            async with http.post(f"http://127.0.0.1:{port}/", json=body) as resp:
                assert (await resp.json())["result"]["parts"][0]["text"] == "echo: hi"
            body = {**body, "method": "message/stream"}
            body["params"]["message"]["parts"][0]["text"] = "stream: a b"  # type: ignore[index]
            async with http.post(f"http://127.0.0.1:{port}/", json=body) as resp:
                frames = [line async for line in resp.content if line.startswith(b"data:")]
            assert len(frames) >= 2
        request = pb.SendMessageRequest(message=pb.Message(
            message_id="m2", role=pb.ROLE_USER, parts=[pb.Part(text="hi")]))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            raw = await channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")(
                request.SerializeToString(), metadata=(("a2a-version", "1.0"),), timeout=10)
        answer = pb.SendMessageResponse.FromString(raw)
        assert answer.message.parts[0].text == "echo: hi"
        assert stop_process(proc) == 0  # SIGTERM: a clean stop on uvloop too


def test_an_unknown_loop_is_a_clear_error(tmp_path: Path) -> None:
    path = write_config(tmp_path / "gw.yaml", _config(free_port(), free_port(), free_port()))
    done = subprocess.run([str(VENV_BIN / "a2a-gateway"), "serve", "--config", str(path)],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "A2A_GATEWAY_LOOP": "trio"})
    assert done.returncode == 2
    assert "unknown event loop 'trio'" in done.stderr
