"""The supervisor of ``perdure worker --respawn`` with real forked processes: it keeps a
standby ready and makes it work when the worker dies, passes SIGTERM on, stops when the worker
stops by itself or dies before it is ready, pauses between restarts only when workers keep dying
at once, replaces a standby that dies, and leaves no child behind. Time is injected: the pauses
are recorded, never slept; the processes tell each other through pipes, never by waiting."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from perdure.runtime.supervisor import Supervisor


class Ticks:
    """A clock for the supervisor: each reading is ``step`` seconds after the previous one."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def counted(folder: Path) -> Callable[[], int]:
    """A counter of worker processes, kept in a file each one appends to."""
    log = folder / "starts"

    def start() -> int:
        with log.open("a") as f:
            f.write("x")
        return len(log.read_text())

    return start


def supervise(
    body: Callable[[Callable[[], bool]], int], step: float, *, standby: bool = True
) -> tuple[int, list[str], list[float]]:
    events: list[str] = []
    pauses: list[float] = []
    before = children()
    code = Supervisor(
        body, on_event=events.append, pause=pauses.append, clock=Ticks(step), standby=standby
    ).run()
    assert_no_child_left(before)
    return code, events, pauses


def children() -> set[int]:
    """This process's children, running or zombies (read from /proc: the test process may have
    children of its own, such as servers other tests started, which are not the supervisor's)."""
    me, found = os.getpid(), set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            found.add(int(entry.name))
    return found


def assert_no_child_left(before: set[int]) -> None:
    """Every child the supervisor forked was reaped (none runs, none is a zombie): the test
    process has no child that it did not have ``before``."""
    left = children() - before
    assert not left, f"the supervisor left children behind: {sorted(left)}"


def worked(events: list[str]) -> list[str]:
    """The events without the standby's readiness (which comes whenever the standby is ready)."""
    return [e for e in events if not e.endswith(" ready")]


def lines(fd: int) -> Iterator[str]:
    """Lines read from a pipe (blocking)."""
    with os.fdopen(os.dup(fd), "r", closefd=True) as f:
        yield from f


def test_a_killed_worker_is_started_again_until_one_stops_by_itself(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], bool]) -> int:
        if not ready():
            return 0
        if start() < 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    code, events, pauses = supervise(body, step=5.0)  # each worker lived 5 s: no pause
    assert code == 0
    events = worked(events)
    assert len(events) == 2 and all(
        "killed by SIGKILL; the standby takes over" in e for e in events
    )
    assert pauses == []


def test_workers_that_keep_dying_at_once_are_restarted_with_a_growing_pause(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], bool]) -> int:
        if not ready():
            return 0
        if start() < 6:
            os._exit(3)
        return 0

    code, events, pauses = supervise(body, step=0.01)
    assert code == 0
    assert [e.split(";")[0] for e in worked(events)] == ["worker process exited with 3"] * 5
    assert pauses == pytest.approx([0.1, 0.2, 0.4, 0.8]), "the first restart is at once"


def test_a_worker_that_dies_before_it_is_ready_is_not_started_again(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], bool]) -> int:
        start()
        raise SystemExit(2)

    code, events, _ = supervise(body, step=5.0)
    assert code == 2
    assert events == ["worker process exited with 2 before it was ready; not started again"]
    assert len((tmp_path / "starts").read_text()) == 1


def test_sigterm_reaches_the_worker_and_the_supervisor_exits_with_its_code(
    tmp_path: Path,
) -> None:
    def body(ready: Callable[[], bool]) -> int:
        got: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        if not ready():
            return 0
        os.kill(os.getppid(), signal.SIGTERM)  # as an operator would signal the supervisor
        while not got:
            signal.pause()
        return 7

    code, events, _ = supervise(body, step=5.0)
    assert code == 7
    assert worked(events) == []


def test_the_standby_gets_ready_while_the_worker_works_and_takes_over_when_it_is_killed(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    said_read, said_write = os.pipe()  # the standby tells the worker it is ready
    start = counted(tmp_path)
    (tmp_path / "prepared").mkdir()
    prepared = counted(tmp_path / "prepared")

    def note(line: str) -> None:
        with log.open("a") as f:
            f.write(f"{line} {os.getpid()}\n")

    def body(ready: Callable[[], bool]) -> int:
        note("prepared")
        if prepared() == 2:  # the first standby (forked once the worker is ready)
            os.write(said_write, b"standby ready\n")
        if not ready():
            note("dismissed")
            return 0
        note("works")
        if start() == 1:
            next(lines(said_read))  # the standby is prepared: now die
            note("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    code, events, pauses = supervise(body, step=5.0)
    assert code == 0 and pauses == []
    got = [line.split() for line in log.read_text().splitlines()]
    pids = list(dict.fromkeys(pid for _, pid in got))
    first, second = pids[0], pids[1]
    assert [word for word, pid in got if pid == first] == ["prepared", "works", "killed"]
    assert [word for word, pid in got if pid == second] == ["prepared", "works"]
    at = {(word, pid): i for i, (word, pid) in enumerate(got)}
    assert at["prepared", second] < at["killed", first] < at["works", second], "a standby"
    assert f"worker process {first} was killed by SIGKILL; the standby takes over" in events
    assert all(word in ("prepared", "dismissed") for word, pid in got if pid not in (first, second))


def test_a_standby_never_works_before_it_is_made_active(tmp_path: Path) -> None:
    said_read, said_write = os.pipe()
    start = counted(tmp_path)

    def body(ready: Callable[[], bool]) -> int:
        n = start()
        # as the worker does: from here on SIGTERM asks it to stop (the supervisor sends one
        # to a standby it has not heard ready yet, besides closing its pipe)
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        if n == 2:  # the standby: it says it is ready, then waits to be told
            os.write(said_write, b"standby\n")
        told = ready()
        if n == 1:  # the worker: it returns once the standby is ready
            next(lines(said_read))
            return 0
        os.write(said_write, f"standby {n} made active: {told}\n".encode())
        return 0

    code, events, _ = supervise(body, step=5.0)
    assert code == 0
    os.close(said_write)
    assert list(lines(said_read)) == ["standby 2 made active: False\n"], "it was dismissed"
    assert worked(events) == []


def test_a_standby_that_is_killed_is_replaced(tmp_path: Path) -> None:
    said_read, said_write = os.pipe()  # the supervisor tells the worker each standby is ready
    events: list[str] = []

    def hear(event: str) -> None:
        events.append(event)
        if event.endswith(" ready"):
            os.write(said_write, f"{event.split()[3]}\n".encode())

    def body(ready: Callable[[], bool]) -> int:
        if not ready():
            return 0
        said = lines(said_read)
        os.kill(int(next(said)), signal.SIGKILL)  # kill the first standby, once it is ready
        next(said)  # its replacement is ready
        return 0

    before = children()
    code = Supervisor(body, on_event=hear, pause=lambda _: None, clock=Ticks(5.0)).run()
    assert_no_child_left(before)
    assert code == 0
    killed = [e for e in events if e.startswith("standby worker process")][1]
    assert killed.endswith("was killed by SIGKILL; starting another"), events
    assert sum(e.endswith(" ready") for e in events) == 2


def test_without_a_standby_a_new_worker_is_forked_when_one_dies(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], bool]) -> int:
        if not ready():
            return 0
        if start() < 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    code, events, _ = supervise(body, step=5.0, standby=False)
    assert code == 0
    assert len(events) == 1 and events[0].endswith("was killed by SIGKILL; starting another")
