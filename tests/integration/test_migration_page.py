"""The migration report's web page in a real headless browser (Debian's chromium): a v0.3
primary and its v1.0 successor, which words one artifact differently, in shadow mode; the
page the admin listener serves shows the disagreement (its path, both answers), and an
agent's answer that holds markup is shown as text, never run."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.demo.agent import start_demo_agent
from tests.support.helpers import MakeGateway, free_port
from tests.support.waiting import wait_until

SCRIPT = "<script>document.title='ran'</script>"


def chromium() -> str:
    path = os.environ.get("A2A_TEST_CHROMIUM") or shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found: run `make chromium` (root), or set "
                    "A2A_TEST_CHROMIUM to a chromium binary")
    return path


async def rendered(url: str, shot: Path) -> str:
    """The DOM chromium built from ``url`` (and a screenshot of it at ``shot``)."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={shot.parent / 'cr'}",
             "--window-size=1280,2400"]
    shooting = await asyncio.create_subprocess_exec(
        chromium(), *flags, f"--screenshot={shot}", url,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    dumping = await asyncio.create_subprocess_exec(
        chromium(), *flags[:-2], f"--user-data-dir={shot.parent / 'cr2'}", "--dump-dom", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(dumping.communicate(), 60)
    await asyncio.wait_for(shooting.wait(), 60)
    assert dumping.returncode == 0
    return out.decode()


@pytest.fixture
async def agents() -> AsyncIterator[tuple[str, str]]:
    ports = free_port(), free_port()
    primary = await start_demo_agent("127.0.0.1", ports[0])
    candidate = await start_demo_agent("127.0.0.1", ports[1], protocol="1.0",
                                       answer_variant="artifact-text")
    yield f"http://127.0.0.1:{ports[0]}/", f"http://127.0.0.1:{ports[1]}/"
    await candidate.cleanup()
    await primary.cleanup()


async def test_the_report_page_shows_the_disagreement_in_a_real_browser(
        agents: tuple[str, str], make_gateway: MakeGateway, http: aiohttp.ClientSession,
        tmp_path: Path) -> None:
    primary, candidate = agents
    admin = f"127.0.0.1:{free_port()}"
    gw = await make_gateway({"shop": {
        "backend": {"url": primary, "version": "0.3"},
        "migration": {"candidate": {"url": candidate, "version": "1.0"}, "mode": "shadow",
                      "shadow": {"operations": ["SendMessage"]}}}}, listen_admin=admin)
    for text in ("task: report", f"task: {SCRIPT}"):
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": f"m-{len(text)}", "role": "user",
                        "parts": [{"kind": "text", "text": text}]}}}
        async with http.post(gw + "/shop/", json=body) as resp:
            reply = await resp.json()
        # The primary answered, unchanged: its wording, not the candidate's.
        assert not reply["result"]["artifacts"][0]["parts"][0]["text"].endswith("(v2)")

    async def disagreed() -> dict[str, Any]:
        async with http.get(f"http://{admin}/_admin/migration/shop") as resp:
            report: dict[str, Any] = await resp.json()
        return report if len(report["disagreements"]) == 2 else {}

    report = await wait_until(disagreed, "two disagreements")
    found = report["disagreements"][0]["differences"]
    assert [(d["kind"], d["path"]) for d in found] == [("text", "artifacts[0].parts[0].text")]
    assert found[0]["candidate"] == found[0]["primary"] + " (v2)"

    dom = await rendered(f"http://{admin}/_admin/migration/shop/page", tmp_path / "page.png")
    assert "artifacts[0].parts[0].text" in dom
    assert "(v2)" in dom
    assert "shadow" in dom and "shop" in dom
    assert "<title>ran</title>" not in dom and "&lt;script&gt;" in dom  # shown, not run
    assert (tmp_path / "page.png").stat().st_size > 10_000
