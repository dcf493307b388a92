"""Where log lines go: a text stream (stderr), written at most every FLUSH_EVERY seconds.

Every call logs a line, and writing each one to stderr at once costs a system call and
a flush per call (1.7 % of a translated call's samples in a py-spy profile under load;
one write per turn of the event loop still made one per call or two under load). On the
event loop's thread the lines are kept and written together FLUSH_EVERY seconds after
the first of them, or as soon as they reach KEEP_BYTES, as nginx's `access_log ...
buffer= flush=` does (with bounds of milliseconds and kilobytes, not seconds). An error,
a line from another thread or from outside the loop, and process exit write at once,
after what was kept: what explains a crash is never held back.

Every line of the process comes through here (structlog's and, through the stdlib
bridge, every library's: gateway/observability/observe.py), and a JSON line gets its timestamp here,
under the lock that orders the lines: the lines of one process leave in timestamp order.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Callable
from typing import Any, TextIO

from gateway.observability.logs.lines import stamp as stamp_json

FLUSH_EVERY = 0.05  # seconds a kept line waits at most for its write
KEEP_BYTES = 64 * 1024  # characters kept at most: past them, the lines are written now


class LineWriter:
    """A structlog logger (its methods take the rendered line) over one text stream."""

    def __init__(self, file: TextIO, stamp: Callable[[str], str] | None = None,
                 every: float = FLUSH_EVERY, keep: int = KEEP_BYTES) -> None:
        """``every``: seconds the first kept line waits for its write; ``keep``: the
        characters kept at most."""
        self.every, self.keep = every, keep
        self._file = file
        self._stamp = stamp  # puts the timestamp in a rendered line; None: it has one
        self._lines: list[str] = []
        self._kept = 0  # characters in _lines
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None  # a flush is due on it

    def msg(self, message: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.write_now(message)
            return
        with self._lock:
            line = message if self._stamp is None else self._stamp(message)
            self._lines.append(line)
            self._kept += len(line)
            if self._kept >= self.keep:
                self._write_kept()  # a write already due stays due: it takes what follows
                return
            if self._loop is loop:
                return
            self._loop = loop
        loop.call_later(self.every, self._due)

    def _due(self) -> None:
        with self._lock:
            self._loop = None
            self._write_kept()

    def write_now(self, message: str) -> None:
        """Write what is kept, then ``message``, at once."""
        with self._lock:
            self._lines.append(message if self._stamp is None else self._stamp(message))
            self._write_kept()

    def flush(self) -> None:
        with self._lock:
            self._write_kept()

    def _write_kept(self) -> None:
        lines, self._lines, self._kept = self._lines, [], 0
        if lines:
            lines.append("")
            self._file.write("\n".join(lines))
            self._file.flush()

    # structlog calls the method named as the level.
    debug = info = warn = warning = log = msg
    err = error = critical = exception = fatal = failure = write_now


class LineWriterFactory:
    """structlog's logger factory: every logger shares one :class:`LineWriter`, flushed
    at process exit."""

    def __init__(self, file: TextIO, json: bool = False) -> None:
        """``json``: the lines are JSON objects rendered without their timestamp."""
        self.writer = LineWriter(file, stamp_json if json else None)
        atexit.register(self.writer.flush)

    def __call__(self, *args: Any) -> LineWriter:
        return self.writer

