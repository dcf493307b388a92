"""A real Redis Sentinel setup on loopback ports: a primary, two replicas and one
sentinel (redis-server in sentinel mode: the same binary the redis-sentinel package
links to), nothing kept on disk. The test kills the primary (SIGKILL) and waits for the
sentinel to promote a replica."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.support.helpers import free_port
from tests.support.redis_process import RedisProcess, answers_ping, redis_binary
from tests.support.waiting import wait_until_sync

SERVICE = "gw-primary"
# The sentinel calls the primary down after this long without an answer; a failover
# then takes about a second more (an election of one, a replica promoted). Not less: at
# 500 ms a busy machine made the sentinel judge the replica it had just promoted down
# too, before it answered a first PING, and fail over a second time, to the other
# replica while that one was still resynchronising from the first (its data lost).
DOWN_AFTER_MS = 2000
# A replica's first sync at once (by default a diskless sync waits 5 s for others).
FAST_SYNC = ("--repl-diskless-sync-delay", "0")


class SentinelSetup:
    """``start()`` returns once both replicas are in sync with the primary and the
    sentinel knows them; ``kill_primary()`` SIGKILLs the primary;
    ``wait_for_promotion()`` returns the new primary's port."""

    def __init__(self) -> None:
        self.servers: dict[int, RedisProcess] = {}
        self.sentinel_port = free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="a2a-sentinel-"))
        self._sentinel: subprocess.Popen[bytes] | None = None
        self.primary = 0

    @property
    def hosts(self) -> list[str]:
        return [f"127.0.0.1:{self.sentinel_port}"]

    def start(self) -> SentinelSetup:
        self.primary = free_port()
        self.servers[self.primary] = RedisProcess(self.primary, False, *FAST_SYNC).start()
        for _ in range(2):
            port = free_port()
            self.servers[port] = RedisProcess(
                port, False, *FAST_SYNC, "--replicaof", "127.0.0.1", str(self.primary)).start()
        wait_until_sync(lambda: self._replicas_in_sync(self.primary) == 2,
                        "both replicas in sync with the primary", timeout=20)
        conf = self._dir / "sentinel.conf"
        conf.write_text(
            f"port {self.sentinel_port}\nbind 127.0.0.1\ndir {self._dir}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} 10000\n")
        self._sentinel = subprocess.Popen(
            [redis_binary(), str(conf), "--sentinel"],
            stdout=(self._dir / "sentinel.log").open("wb"), stderr=subprocess.STDOUT)
        wait_until_sync(lambda: answers_ping(self.sentinel_port), "the sentinel up",
                        timeout=10)
        wait_until_sync(lambda: len(self._ask_sentinel("SENTINEL", "REPLICAS", SERVICE)) == 2,
                        "the sentinel knowing both replicas", timeout=20)
        return self

    def _replicas_in_sync(self, port: int) -> int:
        with redis.Redis(port=port, socket_timeout=1) as r:
            info = r.info("replication")
        return sum(1 for key, value in info.items() if key.startswith("slave")
                   and isinstance(value, dict) and value.get("state") == "online")

    def _ask_sentinel(self, *command: str) -> list[object]:
        with redis.Redis(port=self.sentinel_port, socket_timeout=1,
                         decode_responses=True) as r:
            return list(r.execute_command(*command))

    def primary_port(self) -> int:
        """The port the sentinel names as the primary's."""
        addr = self._ask_sentinel("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        return int(str(addr[1]))

    def sizes(self) -> dict[int, object]:
        """Each live server's key count and role: what a failing test shows."""
        out: dict[int, object] = {}
        for port in self.servers:
            if answers_ping(port):
                with redis.Redis(port=port, socket_timeout=1) as r:
                    out[port] = (r.dbsize(), r.info("replication")["role"])
        return out

    def kill_primary(self) -> int:
        port = self.primary
        self.servers[port].kill()
        return port

    def wait_for_promotion(self, timeout: float = 30) -> int:
        old = self.primary
        self.primary = wait_until_sync(
            lambda: (port if (port := self.primary_port()) != old else 0),
            "the sentinel promoting a replica", timeout=timeout, interval=0.05)
        return self.primary

    def stop_sentinel(self) -> None:
        if self._sentinel is not None:
            self._sentinel.kill()
            self._sentinel.wait()
            self._sentinel = None

    def sentinel_log(self) -> str:
        path = self._dir / "sentinel.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        self.stop_sentinel()
        for server in self.servers.values():
            server.close()
        shutil.rmtree(self._dir, ignore_errors=True)



@contextmanager
def sentinel_setup() -> Iterator[SentinelSetup]:
    setup = SentinelSetup()
    try:
        yield setup.start()
    finally:
        setup.close()
