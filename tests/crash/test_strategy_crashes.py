"""Each checkpoint strategy under crashes: a process killed (SIGKILL, or a crash point's
``os._exit``) in the middle of a run has exactly the boundaries durable that the strategy
promises, and a new process finishes the run without making a side effect twice or paying for
a recorded model call again."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from perdure import Runtime
from perdure.core.model import RunStatus
from perdure.testing import FileClock
from tests.apps.strategies_app import EXPECTED, PLAN, plan
from tests.conftest import ROOT, cli_env
from tests.waypoints import Waypoint

APP = [sys.executable, "-m", "tests.apps.strategies_app"]

AT_COMMIT_OF_ACT_3 = {"per_step": 4, "per_effect": 3, "timed": 3, "hybrid": 4}
"""Durable boundaries right after the first act step's boundary was handed over."""


def durable(db_url: str, strategy: str) -> int:
    with Runtime(db_url, workflows=[plan(strategy)], migrate=False) as rt:
        (run,) = rt.runs(limit=10)
        return run.steps_done


def resume_and_check(db_url: str, strategy: str, folder: Path, clock: FileClock) -> None:
    """A new process finishes the run; every side effect and model call was made once."""
    clock.advance(31)  # the dead process's lease runs out
    resumed = subprocess.run(
        [*APP, "resume", db_url, strategy],
        check=False,
        env=cli_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    with Runtime(db_url, workflows=[plan(strategy)], migrate=False) as rt:
        (run,) = rt.runs(limit=10)
        assert run.status is RunStatus.SUCCEEDED, run.error
        assert run.result == {"steps": len(PLAN)}
        steps = rt.store.steps(run.tenant_id, run.run_id)
        assert [s.seq for s in steps] == list(range(1, len(PLAN) + 1))
    calls = Counter(
        (kind, int(i))
        for kind, i, _ in (line.split() for line in (folder / "events").read_text().splitlines())
        if kind != "start"
    )
    wanted = {(kind, i) for i, kind in enumerate(PLAN) if kind != "think"}
    assert set(calls) == wanted
    assert set(calls.values()) == {1}, f"an effect was called twice: {calls}"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(EXPECTED))
@pytest.mark.parametrize("hold", [2, 6])
def test_sigkill_inside_a_step_loses_only_what_the_strategy_allows(
    db_url: str, tmp_path: Path, shared_clock: FileClock, strategy: str, hold: int
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    with Waypoint(tmp_path / "held") as held:
        worker = subprocess.Popen(
            [*APP, "start", db_url, str(folder), strategy],
            env=cli_env(STRATEGY_HOLD=str(hold), STRATEGY_WAYPOINT=str(held.path)),
            cwd=ROOT,
        )
        held.wait(worker)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    assert worker.returncode == -signal.SIGKILL
    # exactly the boundaries the strategy flushed before step `hold` began are stored
    assert durable(db_url, strategy) == EXPECTED[strategy][0][hold]
    resume_and_check(db_url, strategy, folder, shared_clock)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(EXPECTED))
@pytest.mark.parametrize("point", ["after_intent:act-7", "after_outcome:act-3", "after_commit:act"])
def test_a_crash_around_a_side_effect_keeps_what_led_to_it(
    db_url: str, tmp_path: Path, shared_clock: FileClock, strategy: str, point: str
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    crashed = subprocess.run(
        [*APP, "start", db_url, str(folder), strategy],
        check=False,
        env=cli_env(PERDURE_CRASH_AT=point),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == 75, crashed.stderr
    stored = durable(db_url, strategy)
    if point == "after_commit:act":
        assert stored == AT_COMMIT_OF_ACT_3[strategy]
    else:  # the boundaries before the act step are durable before its effect is called
        assert stored == int(point.rsplit("-", 1)[1])
    resume_and_check(db_url, strategy, folder, shared_clock)
