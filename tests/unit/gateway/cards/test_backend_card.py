"""A backend's card as the gateway fetches it: a backend without one is not asked for it
on every call (the defect: each call's precheck fetched the missing card again, a GET per
call; found profiling migration mode)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from gateway.cards.backend import BackendCard
from tests.support.helpers import serving


async def test_a_missing_card_is_asked_for_again_only_after_a_pause() -> None:
    asked: list[str] = []

    async def missing(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", missing)
    async with serving(app) as base, aiohttp.ClientSession() as session:
        card = BackendCard(base + "/.well-known/agent-card.json", 300.0, session, "t")
        for _ in range(20):
            assert await card.get() is None
        assert asked == ["/.well-known/agent-card.json"]
        assert card.last_error == "ValueError: HTTP 404"
        card._fetched_at -= 300  # the pause is over (no waiting in a test)
        assert await card.get() is None
        assert len(asked) == 2
