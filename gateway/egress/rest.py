"""HTTP+JSON backends of either version (an HttpBackend).

The configured `url` is the backend's base without a version prefix: the route table
adds `/v1` for v0.3 and the tenant prefix for a v1.0 backend with a tenant.
"""

from __future__ import annotations

import aiohttp

from gateway.config.models import BackendConfig
from gateway.egress.http_backend import HttpBackend


class RestBackend(HttpBackend):
    def __init__(self, config: BackendConfig, session: aiohttp.ClientSession) -> None:
        assert config.url is not None
        super().__init__(config, session, config.url.rstrip("/"))
