"""The supervisor of ``perdure worker --respawn`` with real forked processes: it starts the
worker again when it dies, passes SIGTERM on, stops when the worker stops by itself or dies
before it is ready, and pauses between restarts only when workers keep dying at once. Time
is injected: the pauses are recorded, never slept."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
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
    body: Callable[[Callable[[], None]], int], step: float
) -> tuple[int, list[str], list[float]]:
    events: list[str] = []
    pauses: list[float] = []
    code = Supervisor(body, on_event=events.append, pause=pauses.append, clock=Ticks(step)).run()
    return code, events, pauses


def test_a_killed_worker_is_started_again_until_one_stops_by_itself(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], None]) -> int:
        ready()
        if start() < 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    code, events, pauses = supervise(body, step=5.0)  # each worker lived 5 s: no pause
    assert code == 0
    assert len(events) == 2 and all("was killed by SIGKILL; starting another" in e for e in events)
    assert pauses == []


def test_workers_that_keep_dying_at_once_are_restarted_with_a_growing_pause(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], None]) -> int:
        ready()
        if start() < 6:
            os._exit(3)
        return 0

    code, events, pauses = supervise(body, step=0.01)
    assert code == 0
    assert [e.split(";")[0] for e in events] == ["worker process exited with 3"] * 5
    assert pauses == pytest.approx([0.1, 0.2, 0.4, 0.8]), "the first restart is at once"


def test_a_worker_that_dies_before_it_is_ready_is_not_started_again(tmp_path: Path) -> None:
    start = counted(tmp_path)

    def body(ready: Callable[[], None]) -> int:
        start()
        raise SystemExit(2)

    code, events, _ = supervise(body, step=5.0)
    assert code == 2
    assert events == ["worker process exited with 2 before it was ready; not started again"]
    assert len((tmp_path / "starts").read_text()) == 1


def test_sigterm_reaches_the_worker_and_the_supervisor_exits_with_its_code(
    tmp_path: Path,
) -> None:
    def body(ready: Callable[[], None]) -> int:
        got: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        ready()
        os.kill(os.getppid(), signal.SIGTERM)  # as an operator would signal the supervisor
        while not got:
            signal.pause()
        return 7

    code, events, _ = supervise(body, step=5.0)
    assert code == 7
    assert events == []
