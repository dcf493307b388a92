"""JSON-RPC backends of either version (an HttpBackend): every call is POSTed to the
configured URL as it is written, trailing slash included."""

from __future__ import annotations

import aiohttp

from gateway.config.models import BackendConfig
from gateway.egress.http_backend import HttpBackend


class JsonRpcBackend(HttpBackend):
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession) -> None:
        assert config.url is not None
        super().__init__(config, session, config.url)
