"""Migration mode's report on a real gateway's admin endpoints
(gateway/server/admin_migration.py) and through `a2a-gateway migration`
(gateway/migration/cli.py): the JSON the CLI prints is the API's answer byte for byte,
the pages are escaped and come with headers that forbid scripts, a bad `last` is 400, a
tenant without migration 404, and the admin rule holds (a gateway-wide credential on the
main listener).

The gateway's ``migration`` here is a small in-test MigrationAdmin (the interface the
routes read, gateway/migration/api.py) serving the sample report: these tests are about
showing a report, not making one (tests/integration/test_migration.py reads the core's
through the same routes).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import aiohttp

from gateway.config.models import parse_config
from gateway.migration.api import LAST_DEFAULT, Move
from gateway.server.app import Server
from tests.security.security_support import keys
from tests.support.helpers import ROOT, free_port
from tests.support.migration_sample import listed, sample_report

KEY = "ops-key-0123456789"


@dataclass
class InTestMigration:
    """The MigrationAdmin of these tests: the sample report for tenant "travel"; a
    promote gives the candidate everything, a rollback nothing."""

    reports: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"travel": sample_report()})
    asked: list[tuple[str, str, Any]] = field(default_factory=list)

    def tenants(self) -> list[str]:
        return list(self.reports)

    async def report(self, tenant: str, last: int = LAST_DEFAULT) -> dict[str, Any] | None:
        self.asked.append(("report", tenant, last))
        found = self.reports.get(tenant)
        if found is None:
            return None
        return {**copy.deepcopy(found), "disagreements": found["disagreements"][:last]}

    async def move(self, tenant: str, action: Move, by: str) -> dict[str, Any] | None:
        self.asked.append((action, tenant, by))
        found = self.reports.get(tenant)
        if found is None:
            return None
        to = 1.0 if action == "promote" else 0.0
        found["events"].insert(0, {"at": "2026-12-05T14:00:00Z", "kind": action,
                                   "from_share": found["share"], "to_share": to, "by": by})
        found["share"] = to
        return await self.report(tenant)

    async def close(self) -> None:  # the gateway closes its migration when it stops
        return None


@dataclass
class Served:
    url: str  # where the admin endpoints are
    migration: InTestMigration


@asynccontextmanager
async def served(agent: str, *, admin_listener: bool = True,
                 **extra: Any) -> AsyncIterator[Served]:
    """A real gateway with tenants "travel" (in migration) and "plain" (not)."""
    port, admin = free_port(), free_port()
    listen = {"http": f"127.0.0.1:{port}"}
    if admin_listener:
        listen["admin"] = f"127.0.0.1:{admin}"
    backend = {"backend": {"url": agent, "version": "0.3"}}
    server = Server(parse_config({"listen": listen, "state": {"path": ":memory:"},
                                  "tenants": {"travel": backend, "plain": backend},
                                  **extra}))
    await server.start()
    migration = InTestMigration()
    server.holder.current.migration = migration  # type: ignore[assignment]
    try:
        yield Served(f"http://127.0.0.1:{admin if admin_listener else port}", migration)
    finally:
        await server.stop()


async def migration_cli(admin: str, *argv: str,
                        env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`a2a-gateway migration ARGV --admin ADMIN` in its own process (this checkout's),
    as an operator runs it: (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "migration", *argv, "--admin", admin, cwd=ROOT,
        env={**os.environ, **(env or {})}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _get(http: aiohttp.ClientSession, url: str, **kw: Any) -> tuple[int, Any]:
    async with http.get(url, **kw) as resp:
        return resp.status, await resp.json()


async def test_the_json_api(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        base = gw.url + "/_admin/migration"
        report = sample_report()
        assert await _get(http, base) == (200, {"tenants": [listed(report)]})
        assert await _get(http, base + "/travel") == (200, report)
        status, one = await _get(http, base + "/travel", params={"last": "1"})
        assert status == 200 and one["disagreements"] == report["disagreements"][:1]
        assert ("report", "travel", 1) in gw.migration.asked
        for bad in ("0", "201", "many", ""):
            assert await _get(http, base + "/travel", params={"last": bad}) == (
                400, {"error": "last must be a whole number from 1 to 200 (the "
                      "disagreements shown; default 20)"})
        assert await _get(http, base + "/plain") == (
            404, {"error": "tenant 'plain' has no migration block (tenants.plain.migration "
                  "in the config)"})
        assert await _get(http, base + "/nobody") == (404, {"error": "no tenant 'nobody'"})
        async with http.post(base + "/nobody/promote") as resp:
            assert resp.status == 404


async def test_promote_and_rollback_answer_the_new_report(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        base = gw.url + "/_admin/migration/travel"
        async with http.post(base + "/promote") as resp:
            assert resp.status == 200
            promoted = await resp.json()
        assert promoted["share"] == 1.0
        assert promoted["events"][0]["kind"] == "promote"
        assert promoted["events"][0]["by"] == "admin API (127.0.0.1)"
        async with http.post(base + "/rollback") as resp:
            assert (await resp.json())["share"] == 0.0
        assert [a[:2] for a in gw.migration.asked if a[0] != "report"] == [
            ("promote", "travel"), ("rollback", "travel")]
        _, now = await _get(http, base)
        assert now["share"] == 0.0 and [e["kind"] for e in now["events"][:2]] == [
            "rollback", "promote"]


# What a page's form sends: a "simple" request, which a browser posts to another site
# without asking it first (no preflight).
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
CROSS_SITE = {"error": "a move by hand is refused from a page of another site (Origin, "
                       "Sec-Fetch-Site): use the CLI or the API"}


async def _moves_refused(gw: Served, http: aiohttp.ClientSession,
                         headers: dict[str, str]) -> None:
    """Both moves are 403 with ``headers`` and the share stays where it was."""
    base = gw.url + "/_admin/migration/travel"
    for action in ("promote", "rollback"):
        async with http.post(f"{base}/{action}", data="x=1",
                             headers={**FORM, **headers}) as resp:
            assert (resp.status, await resp.json()) == (403, CROSS_SITE), (action, headers)
    assert [a for a in gw.migration.asked if a[0] != "report"] == []
    status, report = await _get(http, base)
    assert (status, report["share"]) == (200, sample_report()["share"])


async def test_a_form_posted_from_another_origin_moves_nothing(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        other_port = gw.url.rpartition(":")[0] + f":{free_port()}"
        for origin in ("https://evil.example", "null", other_port,
                       gw.url.replace("http://", "https://")):
            await _moves_refused(gw, http, {"Origin": origin})


async def test_a_cross_site_fetch_moves_nothing_even_without_origin(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        for site in ("cross-site", "same-site"):
            await _moves_refused(gw, http, {"Sec-Fetch-Site": site})
        # Sec-Fetch-Site is the browser's word: an Origin that matches does not outweigh it.
        await _moves_refused(gw, http, {"Origin": gw.url, "Sec-Fetch-Site": "cross-site"})


async def test_the_listeners_own_origin_may_move_and_reading_stays_open(
        demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        base = gw.url + "/_admin/migration/travel"
        for action, headers in (("promote", {"Origin": gw.url}),
                                ("rollback", {"Origin": gw.url,
                                              "Sec-Fetch-Site": "same-origin"}),
                                ("promote", {"Sec-Fetch-Site": "none"})):
            async with http.post(f"{base}/{action}", data="x=1",
                                 headers={**FORM, **headers}) as resp:
                assert resp.status == 200, (action, headers)
                assert (await resp.json())["share"] == (1.0 if action == "promote" else 0.0)
        # Only moves are guarded: a page of another site may still link to the reports.
        async with http.get(base + "/page", headers={"Origin": "https://dash.example",
                                                     "Sec-Fetch-Site": "cross-site"}) as resp:
            assert resp.status == 200


async def test_the_pages_are_escaped_and_forbid_scripts(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        index = gw.url + "/_admin/migration/page"
        async with http.get(index) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
            assert resp.headers["Content-Security-Policy"] == \
                "default-src 'none'; style-src 'unsafe-inline'"
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            assert resp.headers["Cache-Control"] == "no-store"
            listing = await resp.text()
        assert '<a href="travel/page">travel</a>' in listing
        # The index's link leads to the tenant's page, whose link leads back.
        async with http.get(urljoin(index, "travel/page"), params={"last": "1"}) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Security-Policy"] == \
                "default-src 'none'; style-src 'unsafe-inline'"
            text = await resp.text()
        assert urljoin(str(resp.url), "../page") == index
        assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert text.count("<pre>") == 3  # ?last=1: one disagreement, three views
        async with http.get(gw.url + "/_admin/migration/plain/page") as resp:
            assert resp.status == 404 and resp.content_type == "application/json"
        async with http.get(gw.url + "/_admin/migration/travel/page?last=x") as resp:
            assert resp.status == 400


async def test_the_cli_prints_what_the_api_answers(demo_agent: str) -> None:
    async with served(demo_agent) as gw, aiohttp.ClientSession() as http:
        async with http.get(gw.url + "/_admin/migration/travel?last=2") as resp:
            body = await resp.text()
        assert await migration_cli(gw.url, "report", "travel", "--last", "2", "--json") == (
            0, body + "\n", "")
        code, table, _ = await migration_cli(gw.url, "report", "travel")
        assert code == 0 and table.startswith("travel (canary): the candidate gets 30%")
        assert '  state  status.state  "completed" → "failed"' in table
        code, tenants, _ = await migration_cli(gw.url, "report")
        assert code == 0 and tenants.splitlines()[2].split()[:2] == ["travel", "canary"]
        assert await migration_cli(gw.url, "promote", "travel") == (
            0, "promote: travel (canary): the candidate gets 100% of new conversations "
               "(configured: 30%)\n", "")
        assert await migration_cli(gw.url, "report", "plain") == (
            1, "", "a2a-gateway: HTTP 404: tenant 'plain' has no migration block "
                   "(tenants.plain.migration in the config)\n")
        assert await migration_cli(gw.url, "rollback", "nobody") == (
            1, "", "a2a-gateway: HTTP 404: no tenant 'nobody'\n")


async def test_on_the_main_listener_a_gateway_wide_key_is_needed(demo_agent: str) -> None:
    async with served(demo_agent, admin_listener=False,
                      auth={"api_keys": keys(ops=KEY)}) as gw, \
            aiohttp.ClientSession() as http:
        for path in ("", "/page", "/travel", "/travel/page"):
            async with http.get(gw.url + "/_admin/migration" + path) as resp:
                assert resp.status == 401, path
                assert (await resp.json())["error"]["status"] == "UNAUTHENTICATED"
        async with http.post(gw.url + "/_admin/migration/travel/promote") as resp:
            assert resp.status == 401
        assert [a for a in gw.migration.asked if a[0] != "report"] == []
        status, _ = await _get(http, gw.url + "/_admin/migration/travel",
                               headers={"X-API-Key": KEY})
        assert status == 200
        code, _, err = await migration_cli(gw.url, "report", "travel")
        assert code == 1 and err.startswith("a2a-gateway: HTTP 401: ")
        assert err.endswith(" (an admin credential: --api-key-env VAR)\n")
        code, out, _ = await migration_cli(gw.url, "report", "travel", "--api-key-env",
                                           "OPS_KEY", env={"OPS_KEY": KEY})
        assert code == 0 and out.startswith("travel (canary)")


async def test_the_cores_report_through_the_api_the_page_and_the_cli(demo_agent: str) -> None:
    # The gateway's own migration this time: a canary whose candidate is the same agent,
    # and a tenant whose migration is off.
    port, admin = free_port(), free_port()
    backend = {"url": demo_agent, "version": "0.3"}
    migration = {"candidate": backend, "mode": "canary", "canary": {"share": 0.5}}
    server = Server(parse_config({
        "listen": {"http": f"127.0.0.1:{port}", "admin": f"127.0.0.1:{admin}"},
        "state": {"path": ":memory:"},
        "tenants": {"shop": {"backend": backend, "migration": migration},
                    "legacy": {"backend": backend, "migration": {**migration,
                                                                 "mode": "off"}}}}))
    await server.start()
    base = f"http://127.0.0.1:{admin}"
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(6):
                body = {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {
                    "message": {"kind": "message", "messageId": f"m{i}", "role": "user",
                                "parts": [{"kind": "text", "text": f"task: {i}"}]}}}
                async with http.post(f"http://127.0.0.1:{port}/shop/", json=body) as resp:
                    assert "result" in await resp.json()
            status, report = await _get(http, base + "/_admin/migration/shop")
            assert status == 200 and report["mode"] == "canary"
            arms = report["arms"]
            assert arms["primary"]["calls"] + arms["candidate"]["calls"] == 6
            status, listing = await _get(http, base + "/_admin/migration")
            assert [t["tenant"] for t in listing["tenants"]] == ["shop", "legacy"]
            async with http.get(base + "/_admin/migration/shop/page") as resp:
                assert resp.status == 200 and "Migration: shop" in await resp.text()
            async with http.post(base + "/_admin/migration/legacy/promote") as resp:
                assert resp.status == 409
                assert (await resp.json())["error"] == (
                    "tenant 'legacy' has its migration off (mode off): nothing to promote")
        code, out, err = await migration_cli(base, "report", "shop")
        assert (code, err) == (0, "")
        assert out.startswith("shop (canary): the candidate gets 50% of new conversations\n")
        code, out, _ = await migration_cli(base, "rollback", "shop")
        assert (code, out) == (0, "rollback: shop (canary): the candidate gets 0% of new "
                                  "conversations (configured: 50%)\n")
        code, out, _ = await migration_cli(base, "report", "shop", "--json")
        event = json.loads(out)["events"][0]
        assert event["kind"] == "rollback" and event["by"] == "admin API (127.0.0.1)"
        assert (await migration_cli(base, "report", "legacy"))[1] == (
            "legacy (off): the primary answers every call\n")
    finally:
        await server.stop()
