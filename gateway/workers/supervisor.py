"""The supervisor of `workers: N` (README "Workers").

It binds no listener: it starts N worker processes (`a2a-gateway serve --worker I`), each
of which opens the HTTP and gRPC listeners with SO_REUSEPORT, so the kernel spreads new
connections over them. It passes SIGHUP on to the workers (reload) and SIGTERM/SIGINT
(graceful stop), restarts a worker that dies (at once if it had served a while, else with
a doubling delay, and gives up after a few quick deaths in a row), and exits when every
worker has stopped. A worker that cannot start the first time stops the whole gateway
with that worker's exit status, as a single process would have.

What workers share comes from here too: the directory where they write their metrics,
and the relay key when none is configured (GENERATED_KEY_ENV).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from gateway.config.models import GatewayConfig
from gateway.preflight.startup import check_listeners_free
from gateway.relay.seals import GENERATED_KEY_ENV, export_generated_key
from gateway.workers import metrics_dir

log = structlog.get_logger("a2a_gateway.workers")

BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0  # seconds before restarting a worker that died young
STABLE_AFTER = 10.0  # a worker that lived this long and died is restarted at once
QUICK_DEATHS = 5  # young deaths in a row after which the supervisor gives up
STOP_MARGIN = 5.0  # seconds past shutdown_grace before a stopping worker is killed
_CLEAN_STOP = (0, -signal.SIGTERM)  # SIGTERM before its handlers were set: nothing to drain


@dataclass
class Worker:
    index: int
    process: asyncio.subprocess.Process
    ready: asyncio.Future[bool]  # True: it serves; False: it exited before
    started: float
    reload_pending: bool = False  # SIGHUP came while it was starting


@dataclass
class Supervisor:
    config: GatewayConfig
    config_path: Path
    count: int
    workers: dict[int, Worker] = field(default_factory=dict)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    exit_code: int = 0
    _served: set[int] = field(default_factory=set)  # indices that have been ready once

    async def run(self) -> int:
        metrics = metrics_dir.MetricsDir()
        env = {**os.environ, metrics_dir.ENV: str(metrics.path),
               GENERATED_KEY_ENV: export_generated_key()}
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_stop_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self._forward_reload)
        keepers = [asyncio.create_task(self._keep(i, env, metrics)) for i in range(self.count)]
        try:
            await self.stopping.wait()
            grace = self.config.shutdown_grace + STOP_MARGIN
            for worker in list(self.workers.values()):
                self._signal(worker, signal.SIGTERM)
            _, late = await asyncio.wait(keepers, timeout=grace)
            if late:
                log.error("workers still running after the grace period; killing them",
                          workers=sorted(self.workers), grace_seconds=grace)
                for worker in list(self.workers.values()):
                    self._signal(worker, signal.SIGKILL)
                await asyncio.wait(keepers)
        finally:
            metrics.close()
        log.info("stopped", exit_code=self.exit_code)
        return self.exit_code

    def _stop(self, exit_code: int) -> None:
        if not self.stopping.is_set():
            self.exit_code = exit_code
            self.stopping.set()

    def _on_stop_signal(self, sig: signal.Signals) -> None:
        if not self.stopping.is_set():
            log.info("shutting down", signal=sig.name, workers=len(self.workers),
                     grace_seconds=self.config.shutdown_grace)
        self._stop(0)

    def _forward_reload(self) -> None:
        # SIGHUP would kill a worker still starting (its handler is not set yet): that one
        # gets it once it is ready, as it may have read the file before the edit.
        serving = [w for w in self.workers.values() if w.ready.done() and w.ready.result()]
        for worker in self.workers.values():
            if worker in serving:
                self._signal(worker, signal.SIGHUP)
            else:
                worker.reload_pending = True
        log.info("reload requested: passed to the workers",
                 workers=sorted(w.index for w in serving))

    @staticmethod
    def _signal(worker: Worker, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            worker.process.send_signal(sig)

    async def _spawn(self, index: int, env: dict[str, str]) -> Worker:
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        cmd = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(self.config_path),
               "--worker", str(index), "--ready-fd", str(write_fd),
               "--supervisor", str(os.getpid())]
        try:
            # Its own process group: a terminal's Ctrl-C reaches the supervisor only, which
            # stops the workers in order.
            process = await asyncio.create_subprocess_exec(
                *cmd, pass_fds=(write_fd,), env=env, process_group=0,
                stdin=asyncio.subprocess.DEVNULL)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        ready: asyncio.Future[bool] = loop.create_future()

        def on_readable() -> None:
            loop.remove_reader(read_fd)
            try:
                data = os.read(read_fd, 1)
            except OSError:
                data = b""
            os.close(read_fd)
            ready.set_result(bool(data))  # nothing: it closed the pipe by exiting

        loop.add_reader(read_fd, on_readable)
        return Worker(index, process, ready, loop.time())

    async def _keep(self, index: int, env: dict[str, str],
                    metrics: metrics_dir.MetricsDir) -> None:
        try:
            await self._keep_running(index, env, metrics)
        except Exception:  # a worker that cannot even be spawned (out of processes, fds)
            log.exception("cannot run a worker; stopping the gateway", worker=index)
            self._stop(1)

    async def _keep_running(self, index: int, env: dict[str, str],
                            metrics: metrics_dir.MetricsDir) -> None:
        """Worker ``index``, started again whenever it dies, until the gateway stops."""
        loop = asyncio.get_running_loop()
        young_deaths = 0
        while not self.stopping.is_set():
            worker = await self._spawn(index, env)
            self.workers[index] = worker
            pid = worker.process.pid
            log.info("worker started", worker=index, pid=pid)
            if self.stopping.is_set():
                self._signal(worker, signal.SIGTERM)
            served = await worker.ready
            if served:
                self._note_ready(index, pid)
                if worker.reload_pending:
                    self._signal(worker, signal.SIGHUP)
            code = await worker.process.wait()
            del self.workers[index]
            metrics.worker_exited(pid)
            if self.stopping.is_set():
                if code not in _CLEAN_STOP:
                    log.error("worker did not stop cleanly", worker=index, pid=pid, code=code)
                    self.exit_code = self.exit_code or 1
                return
            if not served and index not in self._served:
                log.error("worker could not start; stopping the gateway", worker=index,
                          pid=pid, code=code)
                self._stop(code if code > 0 else 1)
                return
            young_deaths = 0 if loop.time() - worker.started >= STABLE_AFTER \
                else young_deaths + 1
            if young_deaths >= QUICK_DEATHS:
                log.error("worker keeps dying; stopping the gateway", worker=index, pid=pid,
                          code=code, deaths=young_deaths)
                self._stop(1)
                return
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (young_deaths - 1)) \
                if young_deaths else 0.0
            log.error("worker exited; starting another", worker=index, pid=pid, code=code,
                      restart_in_seconds=delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), delay)

    def _note_ready(self, index: int, pid: int) -> None:
        log.info("worker ready", worker=index, pid=pid)
        first = len(self._served) < self.count
        self._served.add(index)
        if first and len(self._served) == self.count:
            log.info("workers ready", workers=self.count,
                     pids=sorted(w.process.pid for w in self.workers.values()))


async def supervise(config: GatewayConfig, config_path: Path, count: int, why: str) -> int:
    """Run ``count`` workers of the gateway configured in ``config_path`` until stopped."""
    from gateway.observability.observe import configure_logging

    configure_logging(config.log)
    check_listeners_free(config, demo_agent=False)  # worker 0 runs the demo agent
    log.info("starting workers", workers=count, why=why, http=config.listen.http,
             grpc=config.listen.grpc)
    # The file's path as given (not resolved): a ConfigMap mount swaps a symlink, which
    # each worker's watcher must keep following.
    return await Supervisor(config, Path(os.path.abspath(config_path)), count).run()
