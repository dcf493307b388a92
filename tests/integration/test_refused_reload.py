"""A reload refused after its gateway was built (its credentials cannot be primed, its
migrations cannot be adopted): the config before keeps serving, and the gateway built
for the refused one is closed (its sessions, relay worker and routes), not left behind."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.models import parse_config
from gateway.migration.tenants import Migrations
from gateway.pipeline.core import Gateway
from gateway.server.app import Server
from tests.support.helpers import free_port


async def test_a_gateway_built_for_a_refused_reload_is_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def config(url: str) -> Any:
        return parse_config({"listen": {"http": f"127.0.0.1:{free_port()}"},
                             "state": {"path": ":memory:"},
                             "tenants": {"t": {"backend": {"url": url, "version": "1.0",
                                                           "precheck": False}}}})

    server = Server(config("http://127.0.0.1:9/"))
    await server.start()
    try:
        serving = server.holder.current
        closed: list[Gateway] = []
        real_close = Gateway.close

        async def close(self: Gateway) -> None:
            closed.append(self)
            await real_close(self)

        async def refused(self: Migrations) -> None:
            raise RuntimeError("the store refused the adoption")

        monkeypatch.setattr(Gateway, "close", close)
        monkeypatch.setattr(Migrations, "adopt", refused)
        with pytest.raises(RuntimeError):
            await server.apply(config("http://127.0.0.1:8/"))
        assert server.holder.current is serving
        assert len(closed) == 1 and closed[0] is not serving
    finally:
        monkeypatch.undo()
        await server.stop()
