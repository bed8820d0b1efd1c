"""The processes a test started, found again after it (see the ``no_process_left_behind``
fixture in ``tests/conftest.py``).

For the duration of each test :data:`OWNER_VARIABLE` holds a value unique to that test; every
process the test starts inherits it (``cli_env()`` and the drills' rows copy this environment),
so a process left behind is found even after its parent died and it was reparented. The direct
children of this process that appeared during the test are found as well, with whatever they
started, whatever their environment. The search reads ``/proc`` and runs only when the test
started a process (``subprocess.Popen``) or this process has children: most tests cost nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.waypoints import still_running

OWNER_VARIABLE = "TESTS_PROCESS_OWNER"
"""The environment variable that marks the processes a test started (its value: the test's)."""

PROC = Path("/proc")
HELPERS = (
    b"from multiprocessing.resource_tracker import main",
    b"from multiprocessing.forkserver import main",
)
"""Command lines of this process's own helpers, which multiprocessing starts on first use and
which live (ignoring SIGTERM) until this process ends: never a test's leftover."""
GRACE_SECONDS = 10.0
"""How long a process left behind has after SIGTERM before it is killed."""

_popen_init = subprocess.Popen.__init__
_started = [0]


def _counted_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    _started[0] += 1
    _popen_init(self, *args, **kwargs)


def count_started_processes() -> None:
    """From now on every ``subprocess.Popen`` of this process is counted (see :func:`started`)."""
    subprocess.Popen.__init__ = _counted_init  # type: ignore[method-assign]


def started() -> int:
    """How many processes this process started through ``subprocess.Popen`` so far."""
    return _started[0]


def children() -> set[int]:
    """The direct children of this process (of any of its threads)."""
    found: set[int] = set()
    for task in (PROC / "self" / "task").iterdir():
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent pid, or None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")


def _helper(pid: int) -> bool:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False
    return any(h in raw.replace(b"\0", b" ") for h in HELPERS)


def command_line(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:300]


@dataclass(frozen=True, slots=True)
class Leftover:
    """A process a test left running: its pid and command line, and whether SIGTERM stopped
    it within :data:`GRACE_SECONDS` (otherwise it was killed with SIGKILL)."""

    pid: int
    command: str
    stopped_by_sigterm: bool


def left_behind(owner: str, before: set[int]) -> set[int]:
    """Live processes marked with ``owner``, and live descendants of this process's children
    that were not there before the test (``before``)."""
    marker = f"{OWNER_VARIABLE}={owner}".encode() + b"\0"
    me = os.getpid()
    parents: dict[int, int] = {}
    found: set[int] = set()
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X") or pid == me:
            continue
        parents[pid] = stat[1]
        try:
            if marker in (entry / "environ").read_bytes():
                found.add(pid)
        except OSError:
            continue
    roots = children() - before
    found = {p for p in found if not _helper(p)}
    roots = {p for p in roots if not _helper(p)}
    for pid in parents:
        seen: set[int] = set()
        at = pid
        while at in parents and at not in seen:
            if at in roots:
                found.add(pid)
                break
            seen.add(at)
            at = parents[at]
    return {p for p in found if _alive(p)}


def stop(pids: Iterable[int]) -> list[Leftover]:
    """SIGTERM (after SIGCONT, for a frozen one) each process, wait up to
    :data:`GRACE_SECONDS` for them to end, SIGKILL the rest; what each was and how it ended."""
    commands = {pid: command_line(pid) for pid in pids}
    for pid in commands:
        for signum in (signal.SIGCONT, signal.SIGTERM):
            try:
                os.kill(pid, signum)
            except OSError:
                break
    killed = {p for p in still_running(commands, GRACE_SECONDS) if _alive(p)}
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    return [Leftover(pid, cmd, pid not in killed) for pid, cmd in sorted(commands.items())]
