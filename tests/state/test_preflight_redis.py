"""`check-config --connect` against a real redis-server: it answers PING, so no line;
a wrong password is a line naming state.url (the redis_url fixture lives here)."""

from __future__ import annotations

from gateway.config.models import GatewayConfig, parse_config
from gateway.preflight.connect import connect_problems
from tests.support.helpers import v03


async def test_connect_reaches_a_real_redis(redis_url: str) -> None:
    def config(url: str) -> GatewayConfig:
        return parse_config({"tenants": {"d": v03("http://127.0.0.1:1/")},
                             "state": {"backend": "redis", "url": url}})

    reachable = config(redis_url)
    problems = await connect_problems(reachable)
    assert [p for p in problems if p.startswith("state.url")] == []
    host = redis_url.removeprefix("redis://")
    wrong = config(f"redis://nobody:wrong@{host}")
    problems = await connect_problems(wrong)
    lines = [p for p in problems if p.startswith("state.url")]
    assert len(lines) == 1 and "wrong" not in lines[0], problems
    assert lines[0].startswith(f"state.url: cannot reach redis://***@{host}: Redis store "
                               f"redis://***@{host}: "), lines
