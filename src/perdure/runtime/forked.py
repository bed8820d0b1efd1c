"""One worker process forked by the supervisor, and the two pipes that tie it to it.

``life``: the child holds its write end for its whole life. It writes ``1`` there once it is
ready (its store open, its app loaded); the supervisor reads end of file there when the child is
gone (the kernel closes the child's descriptors as it dies, whatever killed it). So one
``select`` over the children's ``life`` pipes tells the supervisor of every readiness and every
death, without polling and without a signal handler.

``go``: the child, once ready, waits on it. The supervisor writes ``1`` to make it work (a
standby becomes the active worker), or closes it to dismiss the child, which then exits 0
without having claimed anything. A SIGTERM or SIGINT that reaches a waiting child dismisses it
too.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

Body = Callable[[Callable[[], bool]], int]
"""What the worker process runs: given a function to call once it is ready (its runtime and
worker are set up, nothing claimed), which waits until the supervisor makes it work (True) or
dismisses it (False), it works and returns its exit code."""

STOPPING = (signal.SIGTERM, signal.SIGINT)


class Forked:
    """A worker process forked from the supervisor: its pid, its pipes, what it said so far.

    Fork with :meth:`start` while SIGTERM and SIGINT are blocked in the calling thread (the
    child would otherwise run the supervisor's handlers until it puts the defaults back)."""

    def __init__(self, pid: int, life: int, go: int, began: float) -> None:
        self.pid = pid
        self.life = life
        self.go = go
        self.began = began
        self.ready = False
        self.gone = False
        self.active = False

    @classmethod
    def start(cls, body: Body, began: float, keep_closed: list[int]) -> Forked:
        """Fork a child that prepares ``body`` and waits to be made active. ``keep_closed``:
        the supervisor's descriptors of its other children, closed in the new one."""
        life_read, life_write = os.pipe()
        go_read, go_write = os.pipe()
        sys.stdout.flush()  # or the child would inherit, and print again, what is buffered
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: it never returns from here
            for fd in (life_read, go_write, *keep_closed):
                os.close(fd)
            _work(body, life_write, go_read)
        os.close(life_write)
        os.close(go_read)
        return cls(pid, life_read, go_write, began)

    def hear(self) -> None:
        """Read what the child said on ``life`` (call when ``select`` finds it readable)."""
        said = os.read(self.life, 1)
        if said == b"1":
            self.ready = True
        elif not said:
            self.gone = True

    def activate(self) -> None:
        """Make the child work (now if it is ready, else as soon as it is). A child that is
        already gone is heard as gone on ``life``."""
        self.active = True
        with contextlib.suppress(BrokenPipeError):
            os.write(self.go, b"1")

    def dismiss(self) -> None:
        """Tell the child to exit without working (it claimed nothing)."""
        if self.go >= 0:
            os.close(self.go)
            self.go = -1

    def reap(self) -> tuple[int, str | None]:
        """Wait for the child's end (it is gone or going); its exit code, and how it died when
        a signal killed it (None when it exited). Its descriptors are closed."""
        _, status = os.waitpid(self.pid, 0)
        self.dismiss()
        os.close(self.life)
        self.gone = True
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            return 128 + number, f"{self.pid} was killed by {signal.Signals(number).name}"
        return os.waitstatus_to_exitcode(status), None

    def descriptors(self) -> list[int]:
        """The supervisor's descriptors of this child."""
        return [fd for fd in (self.life, self.go) if fd >= 0]


def _work(body: Body, life: int, go: int) -> NoReturn:
    """The child: run ``body`` with the default signal handlers, say on ``life`` when it is
    ready, wait on ``go``, and exit with its code (an exception is printed and exits 1, as it
    would in a process of its own)."""
    for s in STOPPING:
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)

    def ready() -> bool:
        os.write(life, b"1")
        return _told_to_work(go)

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


def _told_to_work(go: int) -> bool:
    """Wait until the supervisor writes ``1`` on ``go`` (True), or closes it, or SIGTERM or
    SIGINT comes (False). The signals' handlers run as usual; a wake-up pipe makes the wait see
    them."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    try:
        while True:
            readable, _, _ = select.select([go, wake_read], [], [])
            if go in readable:
                return os.read(go, 1) == b"1"
            if any(n in STOPPING for n in os.read(wake_read, 64)):
                return False
    finally:
        signal.set_wakeup_fd(previous)
        os.close(wake_read)
        os.close(wake_write)
        os.close(go)
