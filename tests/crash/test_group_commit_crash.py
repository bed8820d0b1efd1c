"""A process that dies inside a group commit loses no acknowledged step and commits no step
twice: killed before the group is written, after it is durable but before any run heard so,
and by SIGKILL at whatever moment the group commits are in."""

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
from tests.apps.group_app import RUNS, STEPS, tally
from tests.conftest import ROOT, cli_env

APP = [sys.executable, "-m", "tests.apps.group_app"]


def acknowledged(stdout: str) -> dict[str, int]:
    """Per run, how many steps the crashed process saw acknowledged (``ACK run n``: n were)."""
    acks: dict[str, int] = {}
    for line in stdout.splitlines():
        if line.startswith("ACK "):
            _, run, n = line.split()
            acks[run] = max(acks.get(run, 0), int(n))
    return acks


def check_after_crash(db_url: str, acks: dict[str, int]) -> None:
    """Every acknowledged step is stored, and each run's stored steps are numbered 1..n."""
    with Runtime(db_url, workflows=[tally], migrate=False) as rt:
        runs = rt.runs(limit=100)
        assert len(runs) == RUNS
        for run in runs:
            steps = rt.store.steps(run.tenant_id, run.run_id)
            assert [s.seq for s in steps] == list(range(1, len(steps) + 1)), run.run_id
            assert run.steps_done == len(steps)
            assert len(steps) >= acks.get(run.run_id, 0), f"{run.run_id} lost an acked step"


def resume_and_check(db_url: str, ledger: Path, clock: FileClock) -> None:
    """A new process finishes every run; every step committed once, every effect made once."""
    clock.advance(31)  # the dead process's leases run out
    resumed = subprocess.run(
        [*APP, "resume", db_url],
        check=False,
        env=cli_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    with Runtime(db_url, workflows=[tally], migrate=False) as rt:
        for run in rt.runs(limit=100):
            assert run.status is RunStatus.SUCCEEDED, (run.run_id, run.error)
            steps = rt.store.steps(run.tenant_id, run.run_id)
            assert [s.seq for s in steps] == list(range(1, STEPS + 1)), run.run_id
    lines = Counter(ledger.read_text().splitlines())
    assert len(lines) == RUNS * STEPS
    assert set(lines.values()) == {1}, "an effect was made twice"


@pytest.mark.slow
@pytest.mark.parametrize("point", ["group_begin:3", "group_durable:3"])
def test_a_crash_inside_a_group_commit(
    db_url: str, tmp_path: Path, shared_clock: FileClock, point: str
) -> None:
    ledger = tmp_path / "ledger.txt"
    crashed = subprocess.run(
        [*APP, "start", db_url, str(ledger)],
        check=False,
        env=cli_env(PERDURE_CRASH_AT=point),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == 75, crashed.stderr
    assert f"CRASH {point}" in crashed.stderr
    acks = acknowledged(crashed.stdout)
    check_after_crash(db_url, acks)
    if point.startswith("group_durable"):
        with Runtime(db_url, workflows=[tally], migrate=False) as rt:
            done = sum(r.steps_done for r in rt.runs(limit=100))
        assert done > sum(acks.values()), "the durable group holds steps nobody heard of"
    resume_and_check(db_url, ledger, shared_clock)


@pytest.mark.slow
def test_sigkill_while_groups_commit(db_url: str, tmp_path: Path, shared_clock: FileClock) -> None:
    ledger = tmp_path / "ledger.txt"
    worker = subprocess.Popen(
        [*APP, "start", db_url, str(ledger)],
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    seen: list[str] = []
    for line in worker.stdout:  # the kill comes once half the steps were acknowledged
        seen.append(line)
        if sum(acknowledged("".join(seen)).values()) >= RUNS * STEPS // 2:
            worker.send_signal(signal.SIGKILL)
            break
    rest, _ = worker.communicate()
    assert worker.returncode == -signal.SIGKILL
    check_after_crash(db_url, acknowledged("".join(seen) + rest))
    resume_and_check(db_url, ledger, shared_clock)
