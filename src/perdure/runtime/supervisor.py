"""Keep a worker process alive by forking it from a warm parent (``perdure worker --respawn``),
with a standby ready to take over.

A new Python process that takes over a crashed worker's runs pays for the interpreter and the
imports before its first step (see ``docs/performance.md``). A supervisor pays that once: it
imports everything, then forks the worker. Once that worker is ready, the supervisor forks a
**standby**: a second child that opens its own store connection, loads the app and builds its
worker, then waits on a pipe without claiming anything (it is not in the workers table either).
When the active worker dies (killed by SIGKILL or the kernel's OOM killer, a crash in native
code, ``os._exit``) the supervisor hears it at once (the dead child's end of a pipe closes; see
:mod:`perdure.runtime.forked`), reaps it, and tells the standby to work: its first claim finds
the dead process's leases held by a process of this host that no longer exists and takes its
runs over without waiting for the leases to run out
(:func:`perdure.runtime.leases.is_dead_local_owner`). Each resumes from its last
committed step, as after any crash. The supervisor forks the next standby half a second later
(``settle``), once the takeover has had the CPU to itself. No connection is
ever shared across a fork: the supervisor holds none and starts no thread, and each child opens
its own after the fork.

SIGTERM and SIGINT are passed to the active worker, which drains; the standby is then dismissed
and the supervisor exits with the worker's code. A worker that dies before it said it was ready (a
configuration error, an unreachable database) is not started again: the supervisor exits with
its code, so a mistake does not loop. The first restart is always at once; when workers keep
dying within ``quick`` seconds of starting, each restart after the first waits a pause that
doubles (0.1 s, 0.2 s, ... up to ``max_pause``), so a run that kills every process it lands in
cannot spin the machine. A standby that dies is replaced at once if it was ready and lived
``quick`` seconds; otherwise none is forked until the active worker is next replaced (then
without a standby: forked on the spot, as the first one was).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType

from perdure.core.errors import ConfigError
from perdure.runtime.forked import STOPPING, Body, Forked

__all__ = ["Body", "Supervisor"]


class Supervisor:
    """Fork ``body`` in a child process, keep a standby child ready beside it (``standby``), and
    make the standby (or a new child) work whenever the active child dies.

    ``on_event`` hears one line per event (a worker died and another took over, a standby
    is ready or died). The next standby is forked ``settle`` seconds after a takeover, so that
    its start does not compete for CPU with the takeover itself. ``pause`` and ``clock`` are how
    the supervisor waits and reads time between restarts (the system's by default)."""

    def __init__(
        self,
        body: Body,
        *,
        on_event: Callable[[str], None] = print,
        quick: float = 1.0,
        max_pause: float = 30.0,
        pause: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        standby: bool = True,
        settle: float = 0.5,
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
        self.keep_standby = standby
        self.settle = settle
        self.active: Forked | None = None
        self.standby: Forked | None = None
        self.stopping = False
        self.signum: int = signal.SIGTERM
        self.restarts = 0

    def run(self) -> int:
        """Start the worker and keep it running; return its exit code once it stops by itself
        (``--until-idle``), is told to stop, or fails before it is ready."""
        previous = {s: signal.signal(s, self._forward) for s in STOPPING}
        try:
            return self._supervise()
        finally:
            for child in (self.active, self.standby):
                if child is not None:
                    _dismiss(child)
                    child.reap()
            self.active = self.standby = None
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _supervise(self) -> int:
        with _signals_held():
            active = self.active = self._fork()
            active.activate()
        quick_deaths = 0
        standby_allowed = self.keep_standby
        standby_due = self.clock()
        while True:
            children = [c for c in (active, self.standby) if c is not None]
            wanted = standby_allowed and self.standby is None and not self.stopping
            timeout = max(0.0, standby_due - self.clock()) if wanted and active.ready else None
            readable, _, _ = select.select([c.life for c in children], [], [], timeout)
            for child in children:
                if child.life in readable:
                    was_ready = child.ready
                    child.hear()
                    if child.ready and not was_ready and child is self.standby:
                        self.on_event(f"standby worker process {child.pid} ready")
            if self.standby is not None and self.standby.gone:
                standby_allowed = self._bury_standby(self.standby) and standby_allowed
            if active.gone:
                self.active = None
                code, how = active.reap()
                if self.stopping or (code == 0 and how is None):
                    return code
                what = how or f"exited with {code}"
                if not active.ready:
                    self.on_event(f"worker process {what} before it was ready; not started again")
                    return code or 1
                quick_deaths = quick_deaths + 1 if self.clock() - active.began < self.quick else 0
                wait = min(0.1 * 2 ** (quick_deaths - 2), self.max_pause) if quick_deaths > 1 else 0
                self.restarts += 1
                later = f" in {wait:g}s" if wait else ""
                taker = "the standby takes over" if self.standby else "starting another"
                self.on_event(f"worker process {what}; {taker}{later}")
                if wait:
                    self.pause(wait)
                with _signals_held():
                    if self.standby is not None:
                        active, self.standby = self.standby, None
                    else:
                        active = self._fork()
                        standby_allowed = self.keep_standby
                    self.active = active
                    active.began = self.clock()
                    active.activate()
                    standby_due = active.began + self.settle
                    if self.stopping:  # a signal that came while it was being made active
                        os.kill(active.pid, self.signum)
            wanted = standby_allowed and self.standby is None and not self.stopping
            if wanted and active.ready and self.clock() >= standby_due:
                with _signals_held():
                    self.standby = self._fork()

    def _bury_standby(self, standby: Forked) -> bool:
        """Reap a standby that died and say so; whether another may be forked now (it was
        ready and lived ``quick`` seconds: not a standby that cannot start)."""
        self.standby = None
        code, how = standby.reap()
        if self.stopping:
            return False
        what = how or f"exited with {code}"
        if standby.ready and self.clock() - standby.began >= self.quick:
            self.on_event(f"standby worker process {what}; starting another")
            return True
        self.on_event(f"standby worker process {what}; none until the worker is replaced")
        return False

    def _fork(self) -> Forked:
        """Fork a child (with the stopping signals held, see :meth:`Forked.start`)."""
        others = [
            fd for c in (self.active, self.standby) if c is not None for fd in c.descriptors()
        ]
        return Forked.start(self.body, self.clock(), others)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        self.stopping, self.signum = True, signum
        if self.active is not None:  # the standby is dismissed once the worker has stopped
            os.kill(self.active.pid, signum)


def _dismiss(child: Forked) -> None:
    """Send a child away: its ``go`` pipe closed, and a SIGTERM when it is working (it drains)
    or still getting ready (it ends at once, having claimed nothing)."""
    child.dismiss()
    if child.active or not child.ready:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGTERM and SIGINT while the block forks or swaps children, so the handler never
    sees them half set (nor runs in a child before it put its own handlers in place)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
