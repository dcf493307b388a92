"""A Docker engine for the image tests (make image-test), as docs/deployment.md runs one on a
machine without systemd: Debian's dockerd started in the background, stopped by its PID when
the tests end. An engine that already answers is used and left running. Every wait here is
bounded; the tests remove every container, network and volume they make (tests/image/test_*.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.support.waiting import wait_until_sync

ROOT = Path(__file__).resolve().parents[2]
# A machine that can pull the real base names it here (A2A_IMAGE_TEST_BASE=python:3.11-slim);
# otherwise a Debian stand-in is built under this name.
OWN_BASE = os.environ.get("A2A_IMAGE_TEST_BASE")
STANDIN_BASE = OWN_BASE or "a2a-gateway-test/python-standin:3.11-bookworm"
STANDIN_REDIS = "a2a-gateway-test/redis-standin:bookworm"
# Debian's CLI matches Debian's daemon; a newer client found first on PATH may lack its parts.
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else (shutil.which("docker") or "docker")
PACKAGES = ["docker.io", "docker-compose", "debootstrap"]


class EngineUnavailable(Exception):
    """Why no engine can run here (the tests are skipped with it)."""


def docker(*args: str, timeout: float = 120, check: bool = True,
           input: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def _answers() -> bool:
    try:
        return docker("info", "--format", "{{.ServerVersion}}", timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _install() -> None:
    if shutil.which("dockerd") and shutil.which("docker-compose") and shutil.which("debootstrap"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise EngineUnavailable(f"dockerd, docker-compose or debootstrap is missing and this is "
                                f"not root with apt-get: install {' '.join(PACKAGES)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
        if proc.returncode != 0:
            raise EngineUnavailable(f"{' '.join(cmd)} failed: {proc.stderr[-500:]}")


@contextmanager
def engine(workdir: Path) -> Iterator[None]:
    """A running engine for the block; started (and then stopped) only if none answers."""
    if _answers():
        yield
        return
    _install()
    # No iptables rules or masquerade on the host (the builds use the host's network); the
    # default bridge stays, so `docker run -p 127.0.0.1:...` publishes through docker-proxy.
    log = (workdir / "dockerd.log").open("w")
    daemon = subprocess.Popen(["dockerd", "--storage-driver=overlay2", "--iptables=false",
                               "--ip-masq=false", "--pidfile", str(workdir / "dockerd.pid")],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with suppress(AssertionError):
            wait_until_sync(lambda: _answers() or daemon.poll() is not None, "dockerd answers",
                            timeout=30, interval=0.5)
        if daemon.poll() is not None or not _answers():
            raise EngineUnavailable(f"dockerd did not answer within 30 s (exit {daemon.poll()}): "
                                    f"{(workdir / 'dockerd.log').read_text()[-800:]}")
        yield
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=10)
        log.close()
        # A stopped dockerd may leave its network namespaces mounted.
        for ns in Path("/var/run/docker/netns").glob("*"):
            subprocess.run(["umount", str(ns)], capture_output=True, check=False)


def standin_bases() -> None:
    """The Debian stand-ins for python:3.11-slim and redis, built once per machine (or the
    base A2A_IMAGE_TEST_BASE names, pulled, and the Redis stand-in built on it)."""
    if OWN_BASE:
        if not docker("images", "-q", OWN_BASE).stdout.strip():
            docker("pull", OWN_BASE, timeout=600)
    else:
        proc = subprocess.run([str(ROOT / "tests" / "image" / "standin_base.sh"), STANDIN_BASE],
                              capture_output=True, text=True, timeout=900, check=False,
                              env={**os.environ, "DOCKER": DOCKER})
        if proc.returncode != 0:
            raise EngineUnavailable(f"the stand-in base could not be built: {proc.stderr[-800:]}")
    if not docker("images", "-q", STANDIN_REDIS).stdout.strip():
        dockerfile = (f"FROM {STANDIN_BASE}\n"
                      "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends "
                      "redis-server && rm -rf /var/lib/apt/lists/*\nWORKDIR /data\n")
        docker("build", "--network=host", "-t", STANDIN_REDIS, "-", input=dockerfile, timeout=600)


def wait_healthy(container: str, timeout: float = 90) -> list[str]:
    """The container's health statuses until `healthy` (a bounded wait on the condition);
    an `unhealthy` container fails at once, with its last log lines."""
    seen: list[str] = []

    def settled() -> bool:
        status = docker("inspect", "-f", "{{.State.Health.Status}}", container).stdout.strip()
        if not seen or seen[-1] != status:
            seen.append(status)
        return status in {"healthy", "unhealthy"}

    with suppress(AssertionError):
        wait_until_sync(settled, f"{container} healthy", timeout=timeout, interval=1)
    if seen[-1] != "healthy":
        logs = docker("logs", "--tail", "40", container, check=False)
        raise AssertionError(f"{container} not healthy within {timeout} s: {seen}\n"
                             f"{logs.stdout[-2000:]}{logs.stderr[-2000:]}")
    return seen
