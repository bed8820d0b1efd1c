"""Keep a worker process alive by forking it from a warm parent (``perdure worker --respawn``).

A new Python process that takes over a crashed worker's runs pays for the interpreter and the
imports before its first step (about 0.3 s; see ``docs/performance.md``). A supervisor pays
that once: it imports everything, then forks the worker. When the worker process dies (killed
by SIGKILL or the kernel's OOM killer, a crash in native code, ``os._exit``) the supervisor
forks another at once; the new process finds the dead one's leases held by a process of this
host that no longer exists and takes its runs over without waiting for the leases to run out
(:func:`perdure.runtime.execution.leases.is_dead_local_owner`). Each resumes from its last committed
step, as after any crash.

The supervisor holds no connection and starts no thread, so forking it is safe. SIGTERM and
SIGINT are passed to the worker, which drains; the supervisor then exits with its code. A
worker that dies before it said it was ready (a configuration error, an unreachable database)
is not started again: the supervisor exits with its code, so a mistake does not loop. The first
restart is always at once; when workers keep dying within ``quick`` seconds of starting, each
restart after the first waits a pause that doubles (0.1 s, 0.2 s, ... up to ``max_pause``), so
a run that kills every process it lands in cannot spin the machine.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from perdure.core.errors import ConfigError

Body = Callable[[Callable[[], None]], int]
"""What the worker process runs: given a function to call once it is ready (its runtime and
worker are set up), it works and returns its exit code."""


class Supervisor:
    """Fork ``body`` in a child process and fork it again whenever the child dies.

    ``on_event`` hears one line per event (a worker started, died, is restarted). ``pause`` and
    ``clock`` are how the supervisor waits and reads time between restarts (the system's by
    default)."""

    def __init__(
        self,
        body: Body,
        *,
        on_event: Callable[[str], None] = print,
        quick: float = 1.0,
        max_pause: float = 30.0,
        pause: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not hasattr(os, "fork"):
            raise ConfigError(
                "--respawn needs os.fork, which this platform lacks",
                fix="run the worker under a service manager that restarts it instead",
            )
        self.body = body
        self.on_event = on_event
        self.quick = quick
        self.max_pause = max_pause
        self.pause = pause
        self.clock = clock
        self.child: int | None = None
        self.stopping = False
        self.signum: int = signal.SIGTERM
        self.restarts = 0

    def run(self) -> int:
        """Start the worker and keep it running; return its exit code once it stops by itself
        (``--until-idle``), is told to stop, or fails before it is ready."""
        previous = {s: signal.signal(s, self._forward) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            quick_deaths = 0
            while True:
                began = self.clock()
                ready, code, how = self._once()
                if self.stopping or (code == 0 and how is None):
                    return code
                what = how or f"exited with {code}"
                if not ready:
                    self.on_event(f"worker process {what} before it was ready; not started again")
                    return code or 1
                quick_deaths = quick_deaths + 1 if self.clock() - began < self.quick else 0
                wait = min(0.1 * 2 ** (quick_deaths - 2), self.max_pause) if quick_deaths > 1 else 0
                self.restarts += 1
                later = f" in {wait:g}s" if wait else ""
                self.on_event(f"worker process {what}; starting another{later}")
                if wait:
                    self.pause(wait)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _once(self) -> tuple[bool, int, str | None]:
        """Fork one worker and wait for it: whether it got ready, its exit code, and how it
        died when a signal killed it (None when it exited)."""
        read_end, write_end = os.pipe()
        sys.stdout.flush()  # or the worker would inherit, and print again, what is buffered
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker process: it never returns from here
            os.close(read_end)
            _work(self.body, write_end)
        os.close(write_end)
        self.child = pid
        if self.stopping:  # a signal that came while forking: the new worker hears it too
            os.kill(pid, self.signum)
        try:
            _, status = os.waitpid(pid, 0)
        finally:
            self.child = None
        ready = os.read(read_end, 1) == b"1"
        os.close(read_end)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            return ready, 128 + number, f"{pid} was killed by {signal.Signals(number).name}"
        return ready, os.waitstatus_to_exitcode(status), None

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        self.stopping, self.signum = True, signum
        if self.child is not None:
            os.kill(self.child, signum)


def _work(body: Body, ready_fd: int) -> NoReturn:
    """The worker process: run ``body`` with the default signal handlers, tell the supervisor
    through ``ready_fd`` when it is ready, and exit with its code (an exception is printed and
    exits 1, as it would in a process of its own)."""
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)

    def ready() -> None:
        nonlocal ready_fd
        if ready_fd >= 0:
            os.write(ready_fd, b"1")
            os.close(ready_fd)
            ready_fd = -1

    code = 1
    try:
        code = body(ready)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
