"""Points a process under test reaches, told to the test without polling or sleeping.

A test makes a :class:`Waypoint` at a path before it starts the process; the process calls
:func:`reach` with that path when it gets there (the test apps take the path from their
environment). The waypoint is a named pipe: ``reach`` writes a line to it, and
:meth:`Waypoint.wait` blocks in ``select`` until that line arrives, or the process ends (its
pidfd becomes readable), or the bound passes. No clock is read in between: a loaded machine
only makes the wait longer, never the test wrong.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def reach(path: str | Path) -> None:
    """Tell the test waiting at ``path`` that this point was reached (a plain file is written
    when no test made a waypoint there)."""
    with open(path, "w") as pipe:
        pipe.write("reached\n")


def still_running(pids: Iterable[int], seconds: float) -> set[int]:
    """Wait until every process of ``pids`` has ended, for at most ``seconds``; return those
    still running. Each process's pidfd becomes readable when it ends, so the wait is one
    ``select``, not a poll."""
    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue  # already gone
    deadline = time.monotonic() + seconds
    try:
        while fds and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(fds), [], [], left)
            for fd in ready:
                os.close(fd)
                del fds[fd]
        return set(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


class Waypoint:
    """A named pipe at ``path`` that a process under test writes to when it reaches a point.
    The test holds both ends open, so the pipe never reads as closed before the line comes."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._read = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._keep = os.open(path, os.O_WRONLY | os.O_NONBLOCK)

    def wait(self, proc: subprocess.Popen[Any] | None = None, seconds: float = 60) -> None:
        """Block until the point is reached; fail the test when ``proc`` ended first or the
        bound passed (a broken test must not hang)."""
        watched = [self._read]
        ended = os.pidfd_open(proc.pid) if proc is not None else None
        if ended is not None:
            watched.append(ended)
        try:
            ready, _, _ = select.select(watched, [], [], seconds)
        finally:
            if ended is not None:
                os.close(ended)
        if self._read not in ready:
            why = "the process ended" if ready else f"{seconds:.0f} s passed"
            raise AssertionError(f"{self.path.name} was not reached: {why}")
        os.read(self._read, 4096)

    def close(self) -> None:
        """Close the test's ends of the pipe."""
        os.close(self._read)
        os.close(self._keep)

    def __enter__(self) -> Waypoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
